#map = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#map1 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
#map2 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, 0)>
#map3 = affine_map<(d0, d1, d2, d3) -> ()>
module {
  func.func @main(%arg0: tensor<1x8x1500x64xf32>, %arg1: tensor<1x8x1500x64xf32>, %arg2: tensor<1x8x1500x64xf32>) -> tensor<1x8x1500x64xf32> {
    %cst = arith.constant 0.000000e+00 : f32
    %c0_i64 = arith.constant 0 : i64
    %cst_0 = arith.constant 0xFF800000 : f32
    %true = arith.constant true
    %cst_1 = arith.constant dense<0.000000e+00> : tensor<1x8x1500x1500xf32>
    %cst_2 = arith.constant dense<0xFF800000> : tensor<f32>
    %cst_3 = arith.constant 0.35355339059327379 : f64
    %0 = tensor.empty() : tensor<1x8x1500x64xf32>
    %1 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%arg0 : tensor<1x8x1500x64xf32>) outs(%0 : tensor<1x8x1500x64xf32>) {
    ^bb0(%in: f32, %out: f32):
      %28 = arith.truncf %cst_3 : f64 to f32
      %29 = arith.mulf %in, %28 : f32
      linalg.yield %29 : f32
    } -> tensor<1x8x1500x64xf32>
    %2 = tensor.empty() : tensor<1x8x64x1500xf32>
    %transposed = linalg.transpose ins(%arg1 : tensor<1x8x1500x64xf32>) outs(%2 : tensor<1x8x64x1500xf32>) permutation = [0, 1, 3, 2] 
    %3 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%transposed : tensor<1x8x64x1500xf32>) outs(%2 : tensor<1x8x64x1500xf32>) {
    ^bb0(%in: f32, %out: f32):
      %28 = arith.truncf %cst_3 : f64 to f32
      %29 = arith.mulf %in, %28 : f32
      linalg.yield %29 : f32
    } -> tensor<1x8x64x1500xf32>
    %collapsed = tensor.collapse_shape %1 [[0, 1], [2], [3]] : tensor<1x8x1500x64xf32> into tensor<8x1500x64xf32>
    %collapsed_4 = tensor.collapse_shape %3 [[0, 1], [2], [3]] : tensor<1x8x64x1500xf32> into tensor<8x64x1500xf32>
    %4 = tensor.empty() : tensor<8x1500x1500xf32>
    %5 = linalg.fill ins(%cst : f32) outs(%4 : tensor<8x1500x1500xf32>) -> tensor<8x1500x1500xf32>
    %6 = linalg.batch_matmul ins(%collapsed, %collapsed_4 : tensor<8x1500x64xf32>, tensor<8x64x1500xf32>) outs(%5 : tensor<8x1500x1500xf32>) -> tensor<8x1500x1500xf32>
    %expanded = tensor.expand_shape %6 [[0, 1], [2], [3]] output_shape [1, 8, 1500, 1500] : tensor<8x1500x1500xf32> into tensor<1x8x1500x1500xf32>
    %7 = tensor.empty() : tensor<1x8x1500xi64>
    %8 = linalg.fill ins(%c0_i64 : i64) outs(%7 : tensor<1x8x1500xi64>) -> tensor<1x8x1500xi64>
    %9 = tensor.empty() : tensor<1x8x1500xf32>
    %10 = linalg.fill ins(%cst_0 : f32) outs(%9 : tensor<1x8x1500xf32>) -> tensor<1x8x1500xf32>
    %11:2 = linalg.generic {indexing_maps = [#map, #map1, #map1], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%expanded : tensor<1x8x1500x1500xf32>) outs(%10, %8 : tensor<1x8x1500xf32>, tensor<1x8x1500xi64>) {
    ^bb0(%in: f32, %out: f32, %out_9: i64):
      %28 = linalg.index 3 : index
      %29 = arith.index_cast %28 : index to i64
      %30 = arith.maximumf %in, %out : f32
      %31 = arith.cmpf ogt, %in, %out : f32
      %32 = arith.select %31, %29, %out_9 : i64
      linalg.yield %30, %32 : f32, i64
    } -> (tensor<1x8x1500xf32>, tensor<1x8x1500xi64>)
    %expanded_5 = tensor.expand_shape %11#0 [[0], [1], [2, 3]] output_shape [1, 8, 1500, 1] : tensor<1x8x1500xf32> into tensor<1x8x1500x1xf32>
    %12 = tensor.empty() : tensor<1x8x1500x1500xf32>
    %13 = linalg.generic {indexing_maps = [#map, #map2, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%expanded, %expanded_5 : tensor<1x8x1500x1500xf32>, tensor<1x8x1500x1xf32>) outs(%12 : tensor<1x8x1500x1500xf32>) {
    ^bb0(%in: f32, %in_9: f32, %out: f32):
      %28 = arith.subf %in, %in_9 : f32
      linalg.yield %28 : f32
    } -> tensor<1x8x1500x1500xf32>
    %14 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%13 : tensor<1x8x1500x1500xf32>) outs(%12 : tensor<1x8x1500x1500xf32>) {
    ^bb0(%in: f32, %out: f32):
      %28 = math.exp %in : f32
      linalg.yield %28 : f32
    } -> tensor<1x8x1500x1500xf32>
    %15 = tensor.empty() : tensor<1x8x1500x1xf32>
    %16 = linalg.fill ins(%cst : f32) outs(%15 : tensor<1x8x1500x1xf32>) -> tensor<1x8x1500x1xf32>
    %17 = linalg.generic {indexing_maps = [#map, #map2], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%14 : tensor<1x8x1500x1500xf32>) outs(%16 : tensor<1x8x1500x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %28 = arith.addf %in, %out : f32
      linalg.yield %28 : f32
    } -> tensor<1x8x1500x1xf32>
    %18 = linalg.generic {indexing_maps = [#map, #map2, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%14, %17 : tensor<1x8x1500x1500xf32>, tensor<1x8x1500x1xf32>) outs(%12 : tensor<1x8x1500x1500xf32>) {
    ^bb0(%in: f32, %in_9: f32, %out: f32):
      %28 = arith.divf %in, %in_9 : f32
      linalg.yield %28 : f32
    } -> tensor<1x8x1500x1500xf32>
    %19 = tensor.empty() : tensor<1x8x1500x1500xi1>
    %20 = linalg.generic {indexing_maps = [#map, #map3, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%expanded, %cst_2 : tensor<1x8x1500x1500xf32>, tensor<f32>) outs(%19 : tensor<1x8x1500x1500xi1>) {
    ^bb0(%in: f32, %in_9: f32, %out: i1):
      %28 = arith.cmpf oeq, %in, %in_9 : f32
      linalg.yield %28 : i1
    } -> tensor<1x8x1500x1500xi1>
    %21 = tensor.empty() : tensor<1x8x1500x1xi1>
    %22 = linalg.fill ins(%true : i1) outs(%21 : tensor<1x8x1500x1xi1>) -> tensor<1x8x1500x1xi1>
    %23 = linalg.generic {indexing_maps = [#map, #map2], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%20 : tensor<1x8x1500x1500xi1>) outs(%22 : tensor<1x8x1500x1xi1>) {
    ^bb0(%in: i1, %out: i1):
      %28 = arith.andi %in, %out : i1
      linalg.yield %28 : i1
    } -> tensor<1x8x1500x1xi1>
    %24 = linalg.generic {indexing_maps = [#map2, #map, #map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%23, %cst_1, %18 : tensor<1x8x1500x1xi1>, tensor<1x8x1500x1500xf32>, tensor<1x8x1500x1500xf32>) outs(%12 : tensor<1x8x1500x1500xf32>) {
    ^bb0(%in: i1, %in_9: f32, %in_10: f32, %out: f32):
      %28 = arith.select %in, %in_9, %in_10 : f32
      linalg.yield %28 : f32
    } -> tensor<1x8x1500x1500xf32>
    %collapsed_6 = tensor.collapse_shape %24 [[0, 1], [2], [3]] : tensor<1x8x1500x1500xf32> into tensor<8x1500x1500xf32>
    %collapsed_7 = tensor.collapse_shape %arg2 [[0, 1], [2], [3]] : tensor<1x8x1500x64xf32> into tensor<8x1500x64xf32>
    %25 = tensor.empty() : tensor<8x1500x64xf32>
    %26 = linalg.fill ins(%cst : f32) outs(%25 : tensor<8x1500x64xf32>) -> tensor<8x1500x64xf32>
    %27 = linalg.batch_matmul ins(%collapsed_6, %collapsed_7 : tensor<8x1500x1500xf32>, tensor<8x1500x64xf32>) outs(%26 : tensor<8x1500x64xf32>) -> tensor<8x1500x64xf32>
    %expanded_8 = tensor.expand_shape %27 [[0, 1], [2], [3]] output_shape [1, 8, 1500, 64] : tensor<8x1500x64xf32> into tensor<1x8x1500x64xf32>
    return %expanded_8 : tensor<1x8x1500x64xf32>
  }
}
