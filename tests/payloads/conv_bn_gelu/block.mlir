#map = affine_map<(d0) -> (d0)>
#map1 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#map2 = affine_map<(d0, d1, d2, d3) -> (d1, 0, 0)>
#map3 = affine_map<(d0, d1) -> (d0, d1)>
#map4 = affine_map<(d0, d1) -> (d1)>
#map5 = affine_map<(d0, d1) -> (d0)>
#map6 = affine_map<(d0, d1) -> (d0, 0)>
#map7 = affine_map<(d0, d1) -> ()>
module {
  func.func @main(%arg0: tensor<4x3x16x16xf32>) -> (tensor<4x10xf32>, tensor<4x3xf32>) {
    %c512_i64 = arith.constant 512 : i64
    %c0_i64 = arith.constant 0 : i64
    %cst = arith.constant 0.000000e+00 : f32
    %c3_i64 = arith.constant 3 : i64
    %cst_0 = arith.constant 1.000000e+00 : f32
    %cst_1 = arith.constant 4.471500e-02 : f32
    %cst_2 = arith.constant 7.977240e-01 : f32
    %cst_3 = arith.constant 5.000000e-01 : f32
    %cst_4 = arith.constant 0xFF800000 : f32
    %true = arith.constant true
    %c9223372036854775807_i64 = arith.constant 9223372036854775807 : i64
    %cst_5 = arith.constant dense<0x7FC00000> : tensor<f32>
    %cst_6 = arith.constant dense<0xFF800000> : tensor<f32>
    %cst_7 = arith.constant dense_resource<torch_tensor_10_torch.float32> : tensor<10xf32>
    %cst_8 = arith.constant dense_resource<torch_tensor_10_512_torch.float32> : tensor<10x512xf32>
    %cst_9 = arith.constant dense_resource<torch_tensor_8_torch.float32_4> : tensor<8xf32>
    %cst_10 = arith.constant dense_resource<torch_tensor_8_torch.float32_3> : tensor<8xf32>
    %cst_11 = arith.constant 1.000000e-05 : f64
    %cst_12 = arith.constant dense_resource<torch_tensor_8_torch.float32_2> : tensor<8xf32>
    %cst_13 = arith.constant dense_resource<torch_tensor_8_torch.float32_1> : tensor<8xf32>
    %cst_14 = arith.constant dense_resource<torch_tensor_8_3_3_3_torch.float32> : tensor<8x3x3x3xf32>
    %cst_15 = arith.constant dense_resource<torch_tensor_8_torch.float32> : tensor<8xf32>
    %cst_16 = arith.constant dense<1024> : tensor<i64>
    %padded = tensor.pad %arg0 low[0, 0, 1, 1] high[0, 0, 1, 1] {
    ^bb0(%arg1: index, %arg2: index, %arg3: index, %arg4: index):
      tensor.yield %cst : f32
    } : tensor<4x3x16x16xf32> to tensor<4x3x18x18xf32>
    %0 = tensor.empty() : tensor<4x8x16x16xf32>
    %broadcasted = linalg.broadcast ins(%cst_15 : tensor<8xf32>) outs(%0 : tensor<4x8x16x16xf32>) dimensions = [0, 2, 3] 
    %1 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%padded, %cst_14 : tensor<4x3x18x18xf32>, tensor<8x3x3x3xf32>) outs(%broadcasted : tensor<4x8x16x16xf32>) -> tensor<4x8x16x16xf32>
    %2 = tensor.empty() : tensor<8xf32>
    %3 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]} ins(%cst_12 : tensor<8xf32>) outs(%2 : tensor<8xf32>) {
    ^bb0(%in: f32, %out: f32):
      %87 = arith.truncf %cst_11 : f64 to f32
      %88 = arith.addf %in, %87 : f32
      linalg.yield %88 : f32
    } -> tensor<8xf32>
    %4 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]} ins(%3 : tensor<8xf32>) outs(%2 : tensor<8xf32>) {
    ^bb0(%in: f32, %out: f32):
      %87 = math.sqrt %in : f32
      linalg.yield %87 : f32
    } -> tensor<8xf32>
    %5 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]} ins(%4 : tensor<8xf32>) outs(%2 : tensor<8xf32>) {
    ^bb0(%in: f32, %out: f32):
      %87 = arith.cmpf one, %in, %cst : f32
      cf.assert %87, "unimplemented: tensor with zero element"
      %88 = arith.divf %cst_0, %in : f32
      linalg.yield %88 : f32
    } -> tensor<8xf32>
    %expanded = tensor.expand_shape %cst_13 [[0, 1, 2]] output_shape [8, 1, 1] : tensor<8xf32> into tensor<8x1x1xf32>
    %expanded_17 = tensor.expand_shape %5 [[0, 1, 2]] output_shape [8, 1, 1] : tensor<8xf32> into tensor<8x1x1xf32>
    %6 = linalg.generic {indexing_maps = [#map1, #map2, #map1], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%1, %expanded : tensor<4x8x16x16xf32>, tensor<8x1x1xf32>) outs(%0 : tensor<4x8x16x16xf32>) {
    ^bb0(%in: f32, %in_27: f32, %out: f32):
      %87 = arith.subf %in, %in_27 : f32
      linalg.yield %87 : f32
    } -> tensor<4x8x16x16xf32>
    %7 = linalg.generic {indexing_maps = [#map1, #map2, #map1], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%6, %expanded_17 : tensor<4x8x16x16xf32>, tensor<8x1x1xf32>) outs(%0 : tensor<4x8x16x16xf32>) {
    ^bb0(%in: f32, %in_27: f32, %out: f32):
      %87 = arith.mulf %in, %in_27 : f32
      linalg.yield %87 : f32
    } -> tensor<4x8x16x16xf32>
    %expanded_18 = tensor.expand_shape %cst_10 [[0, 1, 2]] output_shape [8, 1, 1] : tensor<8xf32> into tensor<8x1x1xf32>
    %8 = linalg.generic {indexing_maps = [#map1, #map2, #map1], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%7, %expanded_18 : tensor<4x8x16x16xf32>, tensor<8x1x1xf32>) outs(%0 : tensor<4x8x16x16xf32>) {
    ^bb0(%in: f32, %in_27: f32, %out: f32):
      %87 = arith.mulf %in, %in_27 : f32
      linalg.yield %87 : f32
    } -> tensor<4x8x16x16xf32>
    %expanded_19 = tensor.expand_shape %cst_9 [[0, 1, 2]] output_shape [8, 1, 1] : tensor<8xf32> into tensor<8x1x1xf32>
    %9 = linalg.generic {indexing_maps = [#map1, #map2, #map1], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%8, %expanded_19 : tensor<4x8x16x16xf32>, tensor<8x1x1xf32>) outs(%0 : tensor<4x8x16x16xf32>) {
    ^bb0(%in: f32, %in_27: f32, %out: f32):
      %87 = arith.addf %in, %in_27 : f32
      linalg.yield %87 : f32
    } -> tensor<4x8x16x16xf32>
    %10 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%9 : tensor<4x8x16x16xf32>) outs(%0 : tensor<4x8x16x16xf32>) {
    ^bb0(%in: f32, %out: f32):
      %87 = math.fpowi %in, %c3_i64 : f32, i64
      %88 = arith.mulf %87, %cst_1 : f32
      %89 = arith.addf %in, %88 : f32
      %90 = arith.mulf %89, %cst_2 : f32
      %91 = math.tanh %90 : f32
      %92 = arith.addf %91, %cst_0 : f32
      %93 = arith.mulf %92, %cst_3 : f32
      %94 = arith.mulf %in, %93 : f32
      linalg.yield %94 : f32
    } -> tensor<4x8x16x16xf32>
    %11 = tensor.empty() : tensor<4x8x8x8xf32>
    %12 = linalg.fill ins(%cst_4 : f32) outs(%11 : tensor<4x8x8x8xf32>) -> tensor<4x8x8x8xf32>
    %13 = tensor.empty() : tensor<2x2xf32>
    %14 = linalg.pooling_nchw_max {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>} ins(%10, %13 : tensor<4x8x16x16xf32>, tensor<2x2xf32>) outs(%12 : tensor<4x8x8x8xf32>) -> tensor<4x8x8x8xf32>
    %collapsed = tensor.collapse_shape %14 [[0], [1, 2, 3]] : tensor<4x8x8x8xf32> into tensor<4x512xf32>
    %15 = tensor.empty() : tensor<512x10xf32>
    %transposed = linalg.transpose ins(%cst_8 : tensor<10x512xf32>) outs(%15 : tensor<512x10xf32>) permutation = [1, 0] 
    %16 = tensor.empty() : tensor<4x10xf32>
    %17 = linalg.fill ins(%cst : f32) outs(%16 : tensor<4x10xf32>) -> tensor<4x10xf32>
    %18 = linalg.matmul ins(%collapsed, %transposed : tensor<4x512xf32>, tensor<512x10xf32>) outs(%17 : tensor<4x10xf32>) -> tensor<4x10xf32>
    %19 = linalg.generic {indexing_maps = [#map3, #map4, #map3], iterator_types = ["parallel", "parallel"]} ins(%18, %cst_7 : tensor<4x10xf32>, tensor<10xf32>) outs(%16 : tensor<4x10xf32>) {
    ^bb0(%in: f32, %in_27: f32, %out: f32):
      %87 = arith.addf %in, %in_27 : f32
      linalg.yield %87 : f32
    } -> tensor<4x10xf32>
    %20 = tensor.empty() : tensor<4xi64>
    %21 = linalg.fill ins(%c0_i64 : i64) outs(%20 : tensor<4xi64>) -> tensor<4xi64>
    %22 = tensor.empty() : tensor<4xf32>
    %23 = linalg.fill ins(%cst_4 : f32) outs(%22 : tensor<4xf32>) -> tensor<4xf32>
    %24:2 = linalg.generic {indexing_maps = [#map3, #map5, #map5], iterator_types = ["parallel", "reduction"]} ins(%19 : tensor<4x10xf32>) outs(%23, %21 : tensor<4xf32>, tensor<4xi64>) {
    ^bb0(%in: f32, %out: f32, %out_27: i64):
      %87 = linalg.index 1 : index
      %88 = arith.index_cast %87 : index to i64
      %89 = arith.maximumf %in, %out : f32
      %90 = arith.cmpf ogt, %in, %out : f32
      %91 = arith.select %90, %88, %out_27 : i64
      linalg.yield %89, %91 : f32, i64
    } -> (tensor<4xf32>, tensor<4xi64>)
    %expanded_20 = tensor.expand_shape %24#0 [[0, 1]] output_shape [4, 1] : tensor<4xf32> into tensor<4x1xf32>
    %25 = linalg.generic {indexing_maps = [#map3, #map6, #map3], iterator_types = ["parallel", "parallel"]} ins(%19, %expanded_20 : tensor<4x10xf32>, tensor<4x1xf32>) outs(%16 : tensor<4x10xf32>) {
    ^bb0(%in: f32, %in_27: f32, %out: f32):
      %87 = arith.subf %in, %in_27 : f32
      linalg.yield %87 : f32
    } -> tensor<4x10xf32>
    %26 = linalg.generic {indexing_maps = [#map3, #map3], iterator_types = ["parallel", "parallel"]} ins(%25 : tensor<4x10xf32>) outs(%16 : tensor<4x10xf32>) {
    ^bb0(%in: f32, %out: f32):
      %87 = math.exp %in : f32
      linalg.yield %87 : f32
    } -> tensor<4x10xf32>
    %27 = tensor.empty() : tensor<4x1xf32>
    %28 = linalg.fill ins(%cst : f32) outs(%27 : tensor<4x1xf32>) -> tensor<4x1xf32>
    %29 = linalg.generic {indexing_maps = [#map3, #map6], iterator_types = ["parallel", "reduction"]} ins(%26 : tensor<4x10xf32>) outs(%28 : tensor<4x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %87 = arith.addf %in, %out : f32
      linalg.yield %87 : f32
    } -> tensor<4x1xf32>
    %30 = linalg.generic {indexing_maps = [#map3, #map3], iterator_types = ["parallel", "parallel"]} ins(%29 : tensor<4x1xf32>) outs(%27 : tensor<4x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %87 = math.log %in : f32
      linalg.yield %87 : f32
    } -> tensor<4x1xf32>
    %31 = linalg.generic {indexing_maps = [#map3, #map6, #map3], iterator_types = ["parallel", "parallel"]} ins(%25, %30 : tensor<4x10xf32>, tensor<4x1xf32>) outs(%16 : tensor<4x10xf32>) {
    ^bb0(%in: f32, %in_27: f32, %out: f32):
      %87 = arith.subf %in, %in_27 : f32
      linalg.yield %87 : f32
    } -> tensor<4x10xf32>
    %32 = tensor.empty() : tensor<512xi64>
    %33 = linalg.generic {indexing_maps = [#map], iterator_types = ["parallel"]} outs(%32 : tensor<512xi64>) {
    ^bb0(%out: i64):
      %87 = linalg.index 0 : index
      %88 = arith.index_cast %87 : index to i64
      linalg.yield %88 : i64
    } -> tensor<512xi64>
    %34 = tensor.empty() : tensor<4x512xi1>
    %35 = linalg.generic {indexing_maps = [#map3, #map3, #map3], iterator_types = ["parallel", "parallel"]} ins(%collapsed, %collapsed : tensor<4x512xf32>, tensor<4x512xf32>) outs(%34 : tensor<4x512xi1>) {
    ^bb0(%in: f32, %in_27: f32, %out: i1):
      %87 = arith.cmpf une, %in, %in_27 : f32
      linalg.yield %87 : i1
    } -> tensor<4x512xi1>
    %36 = tensor.empty() : tensor<4x512xf32>
    %37 = linalg.generic {indexing_maps = [#map3, #map7, #map3, #map3], iterator_types = ["parallel", "parallel"]} ins(%35, %cst_6, %collapsed : tensor<4x512xi1>, tensor<f32>, tensor<4x512xf32>) outs(%36 : tensor<4x512xf32>) {
    ^bb0(%in: i1, %in_27: f32, %in_28: f32, %out: f32):
      %87 = arith.select %in, %in_27, %in_28 : f32
      linalg.yield %87 : f32
    } -> tensor<4x512xf32>
    %38:2 = linalg.generic {indexing_maps = [#map3, #map5, #map5], iterator_types = ["parallel", "reduction"]} ins(%37 : tensor<4x512xf32>) outs(%23, %21 : tensor<4xf32>, tensor<4xi64>) {
    ^bb0(%in: f32, %out: f32, %out_27: i64):
      %87 = linalg.index 1 : index
      %88 = arith.index_cast %87 : index to i64
      %89 = arith.maximumf %in, %out : f32
      %90 = arith.cmpf ogt, %in, %out : f32
      %91 = arith.select %90, %88, %out_27 : i64
      linalg.yield %89, %91 : f32, i64
    } -> (tensor<4xf32>, tensor<4xi64>)
    %expanded_21 = tensor.expand_shape %38#0 [[0, 1]] output_shape [4, 1] : tensor<4xf32> into tensor<4x1xf32>
    %39 = linalg.generic {indexing_maps = [#map3, #map6, #map3], iterator_types = ["parallel", "parallel"]} ins(%collapsed, %expanded_21 : tensor<4x512xf32>, tensor<4x1xf32>) outs(%34 : tensor<4x512xi1>) {
    ^bb0(%in: f32, %in_27: f32, %out: i1):
      %87 = arith.cmpf oeq, %in, %in_27 : f32
      linalg.yield %87 : i1
    } -> tensor<4x512xi1>
    %40 = linalg.generic {indexing_maps = [#map3, #map3], iterator_types = ["parallel", "parallel"]} ins(%35 : tensor<4x512xi1>) outs(%34 : tensor<4x512xi1>) {
    ^bb0(%in: i1, %out: i1):
      %87 = arith.xori %in, %true : i1
      linalg.yield %87 : i1
    } -> tensor<4x512xi1>
    %41 = linalg.generic {indexing_maps = [#map3, #map3, #map3], iterator_types = ["parallel", "parallel"]} ins(%39, %40 : tensor<4x512xi1>, tensor<4x512xi1>) outs(%34 : tensor<4x512xi1>) {
    ^bb0(%in: i1, %in_27: i1, %out: i1):
      %87 = arith.andi %in, %in_27 : i1
      linalg.yield %87 : i1
    } -> tensor<4x512xi1>
    %42 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]} ins(%33 : tensor<512xi64>) outs(%32 : tensor<512xi64>) {
    ^bb0(%in: i64, %out: i64):
      %87 = arith.addi %in, %c512_i64 : i64
      linalg.yield %87 : i64
    } -> tensor<512xi64>
    %43 = tensor.empty() : tensor<4x512xi64>
    %44 = linalg.generic {indexing_maps = [#map3, #map4, #map7, #map3], iterator_types = ["parallel", "parallel"]} ins(%41, %42, %cst_16 : tensor<4x512xi1>, tensor<512xi64>, tensor<i64>) outs(%43 : tensor<4x512xi64>) {
    ^bb0(%in: i1, %in_27: i64, %in_28: i64, %out: i64):
      %87 = arith.select %in, %in_27, %in_28 : i64
      linalg.yield %87 : i64
    } -> tensor<4x512xi64>
    %45 = linalg.generic {indexing_maps = [#map3, #map4, #map3, #map3], iterator_types = ["parallel", "parallel"]} ins(%35, %33, %44 : tensor<4x512xi1>, tensor<512xi64>, tensor<4x512xi64>) outs(%43 : tensor<4x512xi64>) {
    ^bb0(%in: i1, %in_27: i64, %in_28: i64, %out: i64):
      %87 = arith.select %in, %in_27, %in_28 : i64
      linalg.yield %87 : i64
    } -> tensor<4x512xi64>
    %46 = linalg.fill ins(%c9223372036854775807_i64 : i64) outs(%20 : tensor<4xi64>) -> tensor<4xi64>
    %47:2 = linalg.generic {indexing_maps = [#map3, #map5, #map5], iterator_types = ["parallel", "reduction"]} ins(%45 : tensor<4x512xi64>) outs(%46, %21 : tensor<4xi64>, tensor<4xi64>) {
    ^bb0(%in: i64, %out: i64, %out_27: i64):
      %87 = linalg.index 1 : index
      %88 = arith.index_cast %87 : index to i64
      %89 = arith.minsi %in, %out : i64
      %90 = arith.cmpi slt, %in, %out : i64
      %91 = arith.select %90, %88, %out_27 : i64
      linalg.yield %89, %91 : i64, i64
    } -> (tensor<4xi64>, tensor<4xi64>)
    %expanded_22 = tensor.expand_shape %47#0 [[0, 1]] output_shape [4, 1] : tensor<4xi64> into tensor<4x1xi64>
    %48 = tensor.empty() : tensor<4x1xi1>
    %49 = linalg.generic {indexing_maps = [#map3, #map3], iterator_types = ["parallel", "parallel"]} ins(%expanded_22 : tensor<4x1xi64>) outs(%48 : tensor<4x1xi1>) {
    ^bb0(%in: i64, %out: i1):
      %87 = arith.cmpi sge, %in, %c512_i64 : i64
      linalg.yield %87 : i1
    } -> tensor<4x1xi1>
    %50 = tensor.empty() : tensor<4x1xi64>
    %51 = linalg.generic {indexing_maps = [#map3, #map3], iterator_types = ["parallel", "parallel"]} ins(%expanded_22 : tensor<4x1xi64>) outs(%50 : tensor<4x1xi64>) {
    ^bb0(%in: i64, %out: i64):
      %87 = arith.subi %in, %c512_i64 : i64
      linalg.yield %87 : i64
    } -> tensor<4x1xi64>
    %52 = linalg.generic {indexing_maps = [#map3, #map3, #map3, #map3], iterator_types = ["parallel", "parallel"]} ins(%49, %51, %expanded_22 : tensor<4x1xi1>, tensor<4x1xi64>, tensor<4x1xi64>) outs(%50 : tensor<4x1xi64>) {
    ^bb0(%in: i1, %in_27: i64, %in_28: i64, %out: i64):
      %87 = arith.select %in, %in_27, %in_28 : i64
      linalg.yield %87 : i64
    } -> tensor<4x1xi64>
    %53 = linalg.generic {indexing_maps = [#map3, #map3], iterator_types = ["parallel", "parallel"]} ins(%expanded_22 : tensor<4x1xi64>) outs(%48 : tensor<4x1xi1>) {
    ^bb0(%in: i64, %out: i1):
      %87 = arith.cmpi slt, %in, %c512_i64 : i64
      linalg.yield %87 : i1
    } -> tensor<4x1xi1>
    %54 = linalg.generic {indexing_maps = [#map3, #map7, #map3, #map3], iterator_types = ["parallel", "parallel"]} ins(%53, %cst_5, %expanded_21 : tensor<4x1xi1>, tensor<f32>, tensor<4x1xf32>) outs(%27 : tensor<4x1xf32>) {
    ^bb0(%in: i1, %in_27: f32, %in_28: f32, %out: f32):
      %87 = arith.select %in, %in_27, %in_28 : f32
      linalg.yield %87 : f32
    } -> tensor<4x1xf32>
    %55 = linalg.generic {indexing_maps = [#map4, #map6, #map3], iterator_types = ["parallel", "parallel"]} ins(%33, %52 : tensor<512xi64>, tensor<4x1xi64>) outs(%34 : tensor<4x512xi1>) {
    ^bb0(%in: i64, %in_27: i64, %out: i1):
      %87 = arith.cmpi eq, %in, %in_27 : i64
      linalg.yield %87 : i1
    } -> tensor<4x512xi1>
    %56 = linalg.generic {indexing_maps = [#map3, #map3, #map3], iterator_types = ["parallel", "parallel"]} ins(%35, %55 : tensor<4x512xi1>, tensor<4x512xi1>) outs(%34 : tensor<4x512xi1>) {
    ^bb0(%in: i1, %in_27: i1, %out: i1):
      %87 = arith.ori %in, %in_27 : i1
      linalg.yield %87 : i1
    } -> tensor<4x512xi1>
    %57 = linalg.generic {indexing_maps = [#map3, #map7, #map3, #map3], iterator_types = ["parallel", "parallel"]} ins(%56, %cst_6, %collapsed : tensor<4x512xi1>, tensor<f32>, tensor<4x512xf32>) outs(%36 : tensor<4x512xf32>) {
    ^bb0(%in: i1, %in_27: f32, %in_28: f32, %out: f32):
      %87 = arith.select %in, %in_27, %in_28 : f32
      linalg.yield %87 : f32
    } -> tensor<4x512xf32>
    %58:2 = linalg.generic {indexing_maps = [#map3, #map5, #map5], iterator_types = ["parallel", "reduction"]} ins(%57 : tensor<4x512xf32>) outs(%23, %21 : tensor<4xf32>, tensor<4xi64>) {
    ^bb0(%in: f32, %out: f32, %out_27: i64):
      %87 = linalg.index 1 : index
      %88 = arith.index_cast %87 : index to i64
      %89 = arith.maximumf %in, %out : f32
      %90 = arith.cmpf ogt, %in, %out : f32
      %91 = arith.select %90, %88, %out_27 : i64
      linalg.yield %89, %91 : f32, i64
    } -> (tensor<4xf32>, tensor<4xi64>)
    %expanded_23 = tensor.expand_shape %58#0 [[0, 1]] output_shape [4, 1] : tensor<4xf32> into tensor<4x1xf32>
    %59 = linalg.generic {indexing_maps = [#map3, #map6, #map3], iterator_types = ["parallel", "parallel"]} ins(%collapsed, %expanded_23 : tensor<4x512xf32>, tensor<4x1xf32>) outs(%34 : tensor<4x512xi1>) {
    ^bb0(%in: f32, %in_27: f32, %out: i1):
      %87 = arith.cmpf oeq, %in, %in_27 : f32
      linalg.yield %87 : i1
    } -> tensor<4x512xi1>
    %60 = linalg.generic {indexing_maps = [#map3, #map3], iterator_types = ["parallel", "parallel"]} ins(%56 : tensor<4x512xi1>) outs(%34 : tensor<4x512xi1>) {
    ^bb0(%in: i1, %out: i1):
      %87 = arith.xori %in, %true : i1
      linalg.yield %87 : i1
    } -> tensor<4x512xi1>
    %61 = linalg.generic {indexing_maps = [#map3, #map3, #map3], iterator_types = ["parallel", "parallel"]} ins(%59, %60 : tensor<4x512xi1>, tensor<4x512xi1>) outs(%34 : tensor<4x512xi1>) {
    ^bb0(%in: i1, %in_27: i1, %out: i1):
      %87 = arith.andi %in, %in_27 : i1
      linalg.yield %87 : i1
    } -> tensor<4x512xi1>
    %62 = linalg.generic {indexing_maps = [#map3, #map3], iterator_types = ["parallel", "parallel"]} ins(%55 : tensor<4x512xi1>) outs(%34 : tensor<4x512xi1>) {
    ^bb0(%in: i1, %out: i1):
      %87 = arith.xori %in, %true : i1
      linalg.yield %87 : i1
    } -> tensor<4x512xi1>
    %63 = linalg.generic {indexing_maps = [#map3, #map3, #map3], iterator_types = ["parallel", "parallel"]} ins(%35, %62 : tensor<4x512xi1>, tensor<4x512xi1>) outs(%34 : tensor<4x512xi1>) {
    ^bb0(%in: i1, %in_27: i1, %out: i1):
      %87 = arith.andi %in, %in_27 : i1
      linalg.yield %87 : i1
    } -> tensor<4x512xi1>
    %64 = linalg.generic {indexing_maps = [#map3, #map4, #map7, #map3], iterator_types = ["parallel", "parallel"]} ins(%61, %42, %cst_16 : tensor<4x512xi1>, tensor<512xi64>, tensor<i64>) outs(%43 : tensor<4x512xi64>) {
    ^bb0(%in: i1, %in_27: i64, %in_28: i64, %out: i64):
      %87 = arith.select %in, %in_27, %in_28 : i64
      linalg.yield %87 : i64
    } -> tensor<4x512xi64>
    %65 = linalg.generic {indexing_maps = [#map3, #map4, #map3, #map3], iterator_types = ["parallel", "parallel"]} ins(%63, %33, %64 : tensor<4x512xi1>, tensor<512xi64>, tensor<4x512xi64>) outs(%43 : tensor<4x512xi64>) {
    ^bb0(%in: i1, %in_27: i64, %in_28: i64, %out: i64):
      %87 = arith.select %in, %in_27, %in_28 : i64
      linalg.yield %87 : i64
    } -> tensor<4x512xi64>
    %66:2 = linalg.generic {indexing_maps = [#map3, #map5, #map5], iterator_types = ["parallel", "reduction"]} ins(%65 : tensor<4x512xi64>) outs(%46, %21 : tensor<4xi64>, tensor<4xi64>) {
    ^bb0(%in: i64, %out: i64, %out_27: i64):
      %87 = linalg.index 1 : index
      %88 = arith.index_cast %87 : index to i64
      %89 = arith.minsi %in, %out : i64
      %90 = arith.cmpi slt, %in, %out : i64
      %91 = arith.select %90, %88, %out_27 : i64
      linalg.yield %89, %91 : i64, i64
    } -> (tensor<4xi64>, tensor<4xi64>)
    %expanded_24 = tensor.expand_shape %66#0 [[0, 1]] output_shape [4, 1] : tensor<4xi64> into tensor<4x1xi64>
    %67 = linalg.generic {indexing_maps = [#map3, #map3], iterator_types = ["parallel", "parallel"]} ins(%expanded_24 : tensor<4x1xi64>) outs(%48 : tensor<4x1xi1>) {
    ^bb0(%in: i64, %out: i1):
      %87 = arith.cmpi sge, %in, %c512_i64 : i64
      linalg.yield %87 : i1
    } -> tensor<4x1xi1>
    %68 = linalg.generic {indexing_maps = [#map3, #map3], iterator_types = ["parallel", "parallel"]} ins(%expanded_24 : tensor<4x1xi64>) outs(%50 : tensor<4x1xi64>) {
    ^bb0(%in: i64, %out: i64):
      %87 = arith.subi %in, %c512_i64 : i64
      linalg.yield %87 : i64
    } -> tensor<4x1xi64>
    %69 = linalg.generic {indexing_maps = [#map3, #map3, #map3, #map3], iterator_types = ["parallel", "parallel"]} ins(%67, %68, %expanded_24 : tensor<4x1xi1>, tensor<4x1xi64>, tensor<4x1xi64>) outs(%50 : tensor<4x1xi64>) {
    ^bb0(%in: i1, %in_27: i64, %in_28: i64, %out: i64):
      %87 = arith.select %in, %in_27, %in_28 : i64
      linalg.yield %87 : i64
    } -> tensor<4x1xi64>
    %70 = linalg.generic {indexing_maps = [#map3, #map3], iterator_types = ["parallel", "parallel"]} ins(%expanded_24 : tensor<4x1xi64>) outs(%48 : tensor<4x1xi1>) {
    ^bb0(%in: i64, %out: i1):
      %87 = arith.cmpi slt, %in, %c512_i64 : i64
      linalg.yield %87 : i1
    } -> tensor<4x1xi1>
    %71 = linalg.generic {indexing_maps = [#map3, #map7, #map3, #map3], iterator_types = ["parallel", "parallel"]} ins(%70, %cst_5, %expanded_23 : tensor<4x1xi1>, tensor<f32>, tensor<4x1xf32>) outs(%27 : tensor<4x1xf32>) {
    ^bb0(%in: i1, %in_27: f32, %in_28: f32, %out: f32):
      %87 = arith.select %in, %in_27, %in_28 : f32
      linalg.yield %87 : f32
    } -> tensor<4x1xf32>
    %72 = linalg.generic {indexing_maps = [#map4, #map6, #map3], iterator_types = ["parallel", "parallel"]} ins(%33, %69 : tensor<512xi64>, tensor<4x1xi64>) outs(%34 : tensor<4x512xi1>) {
    ^bb0(%in: i64, %in_27: i64, %out: i1):
      %87 = arith.cmpi eq, %in, %in_27 : i64
      linalg.yield %87 : i1
    } -> tensor<4x512xi1>
    %73 = linalg.generic {indexing_maps = [#map3, #map3, #map3], iterator_types = ["parallel", "parallel"]} ins(%55, %72 : tensor<4x512xi1>, tensor<4x512xi1>) outs(%34 : tensor<4x512xi1>) {
    ^bb0(%in: i1, %in_27: i1, %out: i1):
      %87 = arith.ori %in, %in_27 : i1
      linalg.yield %87 : i1
    } -> tensor<4x512xi1>
    %74 = linalg.generic {indexing_maps = [#map3, #map3, #map3], iterator_types = ["parallel", "parallel"]} ins(%35, %73 : tensor<4x512xi1>, tensor<4x512xi1>) outs(%34 : tensor<4x512xi1>) {
    ^bb0(%in: i1, %in_27: i1, %out: i1):
      %87 = arith.ori %in, %in_27 : i1
      linalg.yield %87 : i1
    } -> tensor<4x512xi1>
    %75 = linalg.generic {indexing_maps = [#map3, #map7, #map3, #map3], iterator_types = ["parallel", "parallel"]} ins(%74, %cst_6, %collapsed : tensor<4x512xi1>, tensor<f32>, tensor<4x512xf32>) outs(%36 : tensor<4x512xf32>) {
    ^bb0(%in: i1, %in_27: f32, %in_28: f32, %out: f32):
      %87 = arith.select %in, %in_27, %in_28 : f32
      linalg.yield %87 : f32
    } -> tensor<4x512xf32>
    %76:2 = linalg.generic {indexing_maps = [#map3, #map5, #map5], iterator_types = ["parallel", "reduction"]} ins(%75 : tensor<4x512xf32>) outs(%23, %21 : tensor<4xf32>, tensor<4xi64>) {
    ^bb0(%in: f32, %out: f32, %out_27: i64):
      %87 = linalg.index 1 : index
      %88 = arith.index_cast %87 : index to i64
      %89 = arith.maximumf %in, %out : f32
      %90 = arith.cmpf ogt, %in, %out : f32
      %91 = arith.select %90, %88, %out_27 : i64
      linalg.yield %89, %91 : f32, i64
    } -> (tensor<4xf32>, tensor<4xi64>)
    %expanded_25 = tensor.expand_shape %76#0 [[0, 1]] output_shape [4, 1] : tensor<4xf32> into tensor<4x1xf32>
    %77 = linalg.generic {indexing_maps = [#map3, #map6, #map3], iterator_types = ["parallel", "parallel"]} ins(%collapsed, %expanded_25 : tensor<4x512xf32>, tensor<4x1xf32>) outs(%34 : tensor<4x512xi1>) {
    ^bb0(%in: f32, %in_27: f32, %out: i1):
      %87 = arith.cmpf oeq, %in, %in_27 : f32
      linalg.yield %87 : i1
    } -> tensor<4x512xi1>
    %78 = linalg.generic {indexing_maps = [#map3, #map3], iterator_types = ["parallel", "parallel"]} ins(%74 : tensor<4x512xi1>) outs(%34 : tensor<4x512xi1>) {
    ^bb0(%in: i1, %out: i1):
      %87 = arith.xori %in, %true : i1
      linalg.yield %87 : i1
    } -> tensor<4x512xi1>
    %79 = linalg.generic {indexing_maps = [#map3, #map3, #map3], iterator_types = ["parallel", "parallel"]} ins(%77, %78 : tensor<4x512xi1>, tensor<4x512xi1>) outs(%34 : tensor<4x512xi1>) {
    ^bb0(%in: i1, %in_27: i1, %out: i1):
      %87 = arith.andi %in, %in_27 : i1
      linalg.yield %87 : i1
    } -> tensor<4x512xi1>
    %80 = linalg.generic {indexing_maps = [#map3, #map3], iterator_types = ["parallel", "parallel"]} ins(%73 : tensor<4x512xi1>) outs(%34 : tensor<4x512xi1>) {
    ^bb0(%in: i1, %out: i1):
      %87 = arith.xori %in, %true : i1
      linalg.yield %87 : i1
    } -> tensor<4x512xi1>
    %81 = linalg.generic {indexing_maps = [#map3, #map3, #map3], iterator_types = ["parallel", "parallel"]} ins(%35, %80 : tensor<4x512xi1>, tensor<4x512xi1>) outs(%34 : tensor<4x512xi1>) {
    ^bb0(%in: i1, %in_27: i1, %out: i1):
      %87 = arith.andi %in, %in_27 : i1
      linalg.yield %87 : i1
    } -> tensor<4x512xi1>
    %82 = linalg.generic {indexing_maps = [#map3, #map4, #map7, #map3], iterator_types = ["parallel", "parallel"]} ins(%79, %42, %cst_16 : tensor<4x512xi1>, tensor<512xi64>, tensor<i64>) outs(%43 : tensor<4x512xi64>) {
    ^bb0(%in: i1, %in_27: i64, %in_28: i64, %out: i64):
      %87 = arith.select %in, %in_27, %in_28 : i64
      linalg.yield %87 : i64
    } -> tensor<4x512xi64>
    %83 = linalg.generic {indexing_maps = [#map3, #map4, #map3, #map3], iterator_types = ["parallel", "parallel"]} ins(%81, %33, %82 : tensor<4x512xi1>, tensor<512xi64>, tensor<4x512xi64>) outs(%43 : tensor<4x512xi64>) {
    ^bb0(%in: i1, %in_27: i64, %in_28: i64, %out: i64):
      %87 = arith.select %in, %in_27, %in_28 : i64
      linalg.yield %87 : i64
    } -> tensor<4x512xi64>
    %84:2 = linalg.generic {indexing_maps = [#map3, #map5, #map5], iterator_types = ["parallel", "reduction"]} ins(%83 : tensor<4x512xi64>) outs(%46, %21 : tensor<4xi64>, tensor<4xi64>) {
    ^bb0(%in: i64, %out: i64, %out_27: i64):
      %87 = linalg.index 1 : index
      %88 = arith.index_cast %87 : index to i64
      %89 = arith.minsi %in, %out : i64
      %90 = arith.cmpi slt, %in, %out : i64
      %91 = arith.select %90, %88, %out_27 : i64
      linalg.yield %89, %91 : i64, i64
    } -> (tensor<4xi64>, tensor<4xi64>)
    %expanded_26 = tensor.expand_shape %84#0 [[0, 1]] output_shape [4, 1] : tensor<4xi64> into tensor<4x1xi64>
    %85 = linalg.generic {indexing_maps = [#map3, #map3], iterator_types = ["parallel", "parallel"]} ins(%expanded_26 : tensor<4x1xi64>) outs(%48 : tensor<4x1xi1>) {
    ^bb0(%in: i64, %out: i1):
      %87 = arith.cmpi slt, %in, %c512_i64 : i64
      linalg.yield %87 : i1
    } -> tensor<4x1xi1>
    %86 = linalg.generic {indexing_maps = [#map3, #map7, #map3, #map3], iterator_types = ["parallel", "parallel"]} ins(%85, %cst_5, %expanded_25 : tensor<4x1xi1>, tensor<f32>, tensor<4x1xf32>) outs(%27 : tensor<4x1xf32>) {
    ^bb0(%in: i1, %in_27: f32, %in_28: f32, %out: f32):
      %87 = arith.select %in, %in_27, %in_28 : f32
      linalg.yield %87 : f32
    } -> tensor<4x1xf32>
    %concat = tensor.concat dim(1) %54, %71, %86 : (tensor<4x1xf32>, tensor<4x1xf32>, tensor<4x1xf32>) -> tensor<4x3xf32>
    return %31, %concat : tensor<4x10xf32>, tensor<4x3xf32>
  }
}

{-#
  dialect_resources: {
    builtin: {
      torch_tensor_10_torch.float32: "0x04000000070F633CE1EDDEBA587155BC4E5320B96F772FBD1E08FFBC53B0BF3B7DD02E3DA996D6BCB918E83C",
      torch_tensor_10_512_torch.float32: "0x0400000087DF1CBD9058B33CC4EF00BD288A4DBC95F072BC1474D6BBFF71FD395D4E153D33C9B43B4123223DAC76DD3CCAE2E4BC3660A23C78ECFFBCEB7099BCB3F7543CA9156F3C48CE073D8C1769BCF25E9438D362BA3CF80F2FBD9CDF023D5FB015BD6EAC1F3AE835F6BB0DADBEBC7367BF3B33B0153D76A953BCB2F0D6BC5DE585BCC16A33BD0D6CA33CC1DFADBC5D9AF1BC2C92D0BC0528D03CE5B9BF3CB1EF0A3DDE51833C0AD071BC92574ABC04EA553CDECD143DF8DE443C034CABBCAA2FAABCEF252BBD7A6F1C3C762BCBBC786421BD4ABB1E3DAA1CEBBC8BBEA4BB88714F3C0A8BB83AF59BF3BC655212BD8E49103DCCD0EB3B972D163D79BD72BCE947553C4A9425BC5CCD00BB5F7FDCBC35E2743CB7ED643CA5FC6EBAB8D822BCE22BDFBCAF5DFA3C52C106BD9350943C3B7973BC0DACAEBCB113023C4210BCBCB8D4263CE7310E3CAB6706BD9B1DF13BED339A3C5E4E8F3CB44AB6BBBD6514BD2A3DDFBB457A7B3C811984BC4C6C893CAD1AF13C000ABDBCD280E439DFB3953CA901633BDDEE713B0ED3B43BD54E0EBDAA9D633B6BB3FA3C771E233DDFC9D43CA00EC23BC313A93CDB1FB0BC350216BD8FA91BBD2F96343D7BD1E53CDB40FABC1CA58D3C2FB3083D1AF3343D4A481E3DD43E0C3D5E0026BCE11B7EBC2FA0143D0CE1CA3C05DED9BC50BD223D0EECAE3C315CC53CD2EAE2BCD6BC4F3C96D57DBCCE700D3D784A02BC39F28C3CA99C003C33099A3CB90F76BC0A85B03C9DDFFCBC5789233CD2F3F4BC169532BD5E5E11BDCBE80E3D36E0C33CCFD5293DB804113D93A821BD0311F7BC20FFE9BB9E1EEBBCFC65FB3C1EDA08BDA2A3B0BC98E12EBDBD8BCDBC63E2143D1E36143D9994013D1CC50B3DBFF5203DCF6839BC3A4C9F3C9046213DD3896F3CF3F5343DAAC6BB3C8C0FE13CE06B7DBC53B7AD3C0767A63B16EC2CBCB315CCBC5925CBBC794A0BBD2B0CF33C3AB1003D81D1A4BBB881D1BC2CE90B3D0C85E73C594B573B65EEAABC8D5D263D660D943C846B09BD21402D3D1A76093DB5F583BC8D85CB3CD6B4CDBC53F2E2BB28B4193D9258EF3A290500BDAF0272BC1B8C44BC03B20BBCDC968A3B7B69273DC5111B3B8389DFBCBF72143BC897AD3CF395B33CC77025BD739101BC068606BD077A9ABCAD70823C1C8C00BD5A94863C2FA5193DD3F63D3B584BF1BC88B681BCCD1C1E3C8AFE09BD53DDB33C8A5724BD3F032EBDADE32FBD85E312BC5C72F33CBC542BBD0076163DE1D290BC1C12543C8514043B853A23BDE51F163DF6EFC23CB4EE333D06E8B63C72F8EEBC6713173D17A91B3B48AFAB3C862511BD8B4350BC23BD31BDE8028DBCBE341C3C24210EBD58CF663C4658C23CCCBDC93BEA3BF2BC0D590CBDD0635FBC7AEB9E3C8C8E323DC82ED03C5D13A3BB99DF7D3C639731BDDD9B1ABD1CEEA83C6F10CDBCDC2CAE3C2293FFBC5B52B3BC881A15BD30EDBC3C538F93BB0C500B3D3F0EE03CD754C83CA144BA3A68DE5FBCF56F1DBCEB75C03B4D77B33C00A4FDBCEFEC173D3D759DBB32AF17BD44E2C3BC4B2B203D0F8C253DAEAC27BD6358FF3C6370B53C214CD63CF83C193DF01EC3BC64A5643C8328943CC6F555BC9450723CA65350BCA2D5DF3C0AE648BC6AF786BC2849363CAE69803CBFE1B0BCB403803B79D0D13C2E1690BB7E5C5C3C55A32EBCF1C97D3C1D2103BDA0E3D4BC74C4B7BCD65B263D73D642BC4B0EFDB8F767AFBCB6B5343DD2CB303DB98508BD36BF12BD1D3609BD6C7D5FB9F59138BC89F8ECBC6ADA81BCF1CC083C6F29BDBC6171203CDD0A26BC406EAFBC97F4C63B3AD8143D4FC4F4BC077D063B188285BCABA2313D97BE2BBD45892DBDAC5F323DE80EE5BC91D20A3C1AF879BB2E8818BC98B821BCD70DE63C4F6F0A3B393E30BDB3BBD5BC93D676BC0D2FB63C9549EABCCAAF2A3DF44521BC4A0402BCD2D60D3DA3F6B53CB486193D526BD13CD5A65BBCE233F0BC877E57BB83D1153DC30373BC34DF27BDF268943C9737303DF7214EBC66E315BD023224BD0E74353CC64E5BBB2DD3B6BCEE5B123CC57C893CD6F70F3D4A8A0C3DE2C3D8BBED9D1FBDC19223BD1004293D840AA03CB9D09D3C2A9F1CBD73A0273DC77C2B3D676F233D88B418BD0C9B88BC41FFF8BC496B2B3D8F8F9BBC574AA5BC3EADBD3CF079A7BCE34FB2BC30587DBB29328BBB9A020DBDF9E8163DFFB39FBCA66B803C99721D3D0295B63C9007CD3B86051A3D84ABC23BE57FA7BC843E2B3DFF5F2B3CFA9D30BD83234EBCE59BF6BC91B51E3D2228EFBBEE0025BD5B1236BB6D5DE33C981D3C3CDAF4643CAA7E863B8CF9863C426C30BCE10490BC473329BD595E08BD92E89C3C315ED6BCFBC2CF3B8A1E673CE8114D3B49BAEABC2A1D2D3D7986D2BC75E3143D9C0010BDFB2C2EBC10F0C43C08EC93BC6310183DA623F9BCCF0318BD0B40A3BC4518EA3BB3AC263D6CD6ACBCAA79813C028835BC6C061DBCA81A053D95490CBD36D0993B743B2A3D7EFEC6BBE18C0C3D0BFC5EBCB6B6113D021B2FBD9FB6D0BBFA5CFEBBA0A96A3CA7098E3C5DFD0A3D37C1D7BBF2B4E5BA9BEDF73C77EA43BC09B01E3DBC0CF1BC60B49CBB41901BBB958BA13C6784F73CB989E5BB94F815BD2963B33C3298583C416E913C7754DFBCA901E93C10742B3D15517B3BB11429BDC125FE3C8E3706BDF771263C5171D23B8472A9BCDA1E7C3CDCE821BD5DEA243CC783E5BC23989CBB4446BA3BEA371A3D6ABCACBC5EEFE73CF2F6B7BB35F1ABBCAFA11DBDAC1626BD11C9303DA59534BCCEAA103B694E443CDF16F63CCD7E1A3D4ECF123D3A1D06BDCB04E8BB5E3BD6BCF7D9CEBC9AC12B3CD7E9293DEB0311BD801BDB3C7BB4BBBC19080DBC19B00F3DC9C323BCE1DC833BAA13FDBC4F171A3DE533BBBB546504BD6F04543C38B500BDE2A30FBDD570303B20850F3DFEE64CBC4D66AA3CC38D1B3D4820F03C50E9BDBC1BBF9EBB2FDB63BCD28F11BD502D99378E34083DF982183D251D873B6374243C00BC9CBC1DA4083DBAA596BCBD7DFBBCA301DF3B2D00D93C9C3423BDB6A2233D8F3C823C1FA6FDBCC0F81BBC7A0C1D3D62E20ABD9DA153BCAC7B6D3C9D961EBD0D78C63C5875BC3CD389E03C14D1E6BCA24B343D439AD6BC0CB8343DF7B82DBD654821BDE15CDE3CD459973B0A16273B617BC8BCC8DD97BC0EB653BC4A5730BD7584163B3D0F003CFAEE1CB898D3693CA8C22B3D4785403C498884BCEEFE94BC65A2E7BCD6F8FABC9F39E9BB7A1000BCB30EA13CA8BF9ABC2D4F103D0D09FEBCAEB50339CEB8223DC000343D20B7D1BCA9FA003C580FAB3B10BEA9BC3D2A7ABC861E443CC4BFFBBC73F0EE3BBFA99C3C2BAB8EBCB35C163D7E9B3EBBF442A43CBD43333DD9535DBC19BCC43C761B4FBC4989D3BBA16BF5BBDFF28FB94BC488BCD9B6293CA344DA3A1C7EE53C9F8E12BCA038913BC5AC86BC679817BD5481923C8A4DB93B98FD90BC6BD074BC975C3D3CE8EC02BC6395EC3C570E243B5AC1883C28BD9D3C09AA31BC34A49C3C8794053D8E48053B61B20D3C6B7AD23AEEA9FA3CDDD998BCE772C0BC78C29D3C2F8B1DBD65BD393A947FA6BC2AF5EE3C3C8928BD0D84DB3CBB17333D8982123CB0F840BBB52F323DD3B79ABC711768BBDD899EBCB4E7C7BBC45E1D3CE36AC13B94C208BC90FD34BD894D143BB696ABBA0FDBD93BC4B40A3DD7F32F3D8BCAD6BC079934BB310F91BCEFD526BD6AB803BDD0E5293D3617D33C2F78C23C5633C93CE9D00FBD8515983B337A283D760CCABCA508213DBD503E3CC0B5FE3CC8179BBC00E8A63CAF7820BD15E737BB5084713C9325593C7B7A173D43E1313D01AF243DE711F33C2089FE3CE4DABABBC07A0CBD096686BC8E93A2BB0DA4C3BC4910B93CBE2B7E3C9CA9E93B9CE82E3C50041F3DA7DD833C34BE1EBD016603BD84919F3C785AC53B3090B03CA1C934BDA40E27BDFD02DE3C9493E73C2BC523BDAF6C893C10590DBD5C16093D6335633C53FD323DCE7B32BD54432EBD6CC6F43C91B6203D57D0DD3CB1B1F03CA77718BD3606033DACE82ABD95C2213CDE25EDBCD4CC8FBC2736003CAC588EBC9A21E5BB15932BBDA4AD2ABD8C3D8C3C403E99BCB442DCBCA2DA8EBCE7FE13BDF7B410BD49A2D83CD800B83C37E6C03B61C4C5BCB7E6703C081E023B9E5E01BD67D01B3C78D3243D400D32BD140134BD758BB93BC54F083DFC4BDCBC74651F3C0382FE3CB03E5F3CB8B21C3C919B343DBADBEB3CCE9ECBBCCC587A3B9FF4B83C86A41F3D221A34BDBE0BC43C033952BC0B4231BDF2B9203C4B19C5BC9E38CD3B700DEBBCE93808BD3CC175BB773C73BC60BED33CDFB6793BD34B0D3DBAB1073CD5D568BC9038F53CDD441E3B3EE7073C30E168BCE64E26397B380BBC893C76BB592C0DBDEE7E8EB90A4116BD77C51BBC71D1D13C63BEFBBC6608F4BC7CCD30BC877E46BC8727F53B936AF03BAB96B73CC266F9BC5F654CBB2D7CCA3C9A931C3DCD4553BB9E7BD1BC2825503C3D2CCE3C022FE2BCB216D2BC3C05A03CC8EE4ABBF7F82ABDFFBED0BC8ED1923CE59675BCBDE3F93C5E1A0F3DB5A9D23B600665BB81D765BC4E7412BB16CC033C95450ABD250D2DBC729216BDF733DE3C328FE6BC7D5E253D3AA73ABC2B67CFBC4FF1AD3CBBE3D73B23B2FA3CE323973C10622EBD69FCE43C925A08BCB802A0BC00EAE53CDC05043D7B1A1FBD6EF282BB7EA7143D79368C3CD480183DEE2378BC44B7C7BC08A91B3DF0E7963C80C62D3DEA3897BCF973E8BC0EBEA9BBB5712ABD01E98D3C8C84053DDAD12D3C6E168FBB4680B33CF5CDE5BCB714313DD4FE33BD17682DBDC6192BBC59DD133D65FF903B160A8B3C3CB004BDC507843C61D2A1BB171D913CE7AFFF3CFD5E9D3C465F76BB006932BB4110E3BC3CF382BC3A44EB3C1F2D91BC25D7E03C558F8FBC03A328BC2E8F763A7D1D26BD435BE7B9C4F791BBD11882BB01BF10BC27B60E3D0797053DD45FF5BC392DA83C09FD0DBD0A1B1ABD5E565D3C1F432A3AB2E4A8BC05982EBD82288CBC6BD7713C408D27BDA2DA2FBD27BBB73B366802BD64961EBD0F7D8BBC7527E9BB437E24BD46BEF1BCA0E73D3B34B22ABD688BCBBBF4C4E9BC8DFAFABCDC4A8E3C26540BBDC22E09BDC676CE3CC960073C4CDB243DE88A41BCC1DEAEBC870586BBA3746A39A90D0A3D4A4F34BD26384EBB0A26A03C595EC7BC74F7B7BC2DF6AE3C36732DBD05932B3C89240CBDA3F4B33C63C71ABD4595DE3CDB5B2BBDA92818BDFABA2A3A22A40E3D2F061BBDA97DA1BC72FC1E3D11DAF2BBAFFC953CE9232EBD60B563BCD9DAB7BC429C183DB042963CDD1504BD4B7BE93B7F2705BA32C094BC77C0CEBCDD4670BC2AAF0E3D9EC301BDABF200BD47645FBC668A493A3C1A453C4AD3AD3AD14D2EBCB085DBBC50EC01BC68BD91BC3040123DB93430BDFBEDE6BC8A4613BD7E5404BC45100D3DA9AB1E3D5C961DBDD8F9FABA2381D43CF2959F3C0D46143D49ADA0BA4C40F3BCE77FEF3CF34B78BC6775BB3C677032BC88E6993C41D0223D6352283D47BD24BD407BEFBCE4B095BC58DFE6BC25B02D3D73CC7FBBAA27F0BC771AA1BC33FAC7BC3BB5933CF2E41DBD72C828BD1C7132BDCBDD9B3CFE02B33CCADAE0BC408E333C2EA0053D386BD23B913319BC72FC553B43489BBB4249B63C0FD4F5BC3997B73CB30DCC3C9D59DBBC55D0133D60CB313DDDB98EBC5CCF4ABC896CB43C72D00DBDCC2B8F3C41EE283C2834E43C103C1DBD5B6316BD239AA23C0569823C977C28BDF1E4C9BCF9A025BDB8AF01BD0A5AA3BCEBCC153DD52010BCF5EFCF3C1EE92B3D21FEA43CE60C22BDA32FB63C14188A3C464D0C3D4C9032BDD9A8DE3CFC2B143DFC6928BDDB83973B06881A3D26A803BD6F956D3C08FA9F3C03C63D3CAFFB333D0637143D704E1B3D0082B4BBBDD2173DB8B128BDDF5DC3BCD2DD1ABC931757BCE434273DD5C2AA3CD015E93C1943F63CDB3807BD0BBAA7BB5877D33BBC533C3C0F2CBA3CC10E90BC90555ABC6377173DBD5442BCAE7CFBBC047AF53C0F28F53CF50B63BCF1C110BC0F9205BD092B17BDFC24883C05A99ABCD21B103DCFF110BDDA2BC8BB5B257A3A9811BA3C2781123D992CF53C345E9F3C6B2CA6BC484601BD35F121BDA1AB0F3B2C912F3D768809BC56DCF3BAB08B03BD7C4C5E3CC886E53C477832BD62EBFEBC1A15063D936F2B3CD79234BB4F6F013C222EDCBB660DFDBC5E2629BD9F1DEE3C1A3DACBBE07486BC35E53ABCD876C5BCAB7556BCBD631BBDF476073DF5D5933C7895B6BC1E2377BC936CA23C9C1086BC43EF3E3C595E473CA1E6E3BCE961353C5235313B70191E3D2AFE82BC32233ABC64F71B3D21D213BDFF40513B9C692E3D9853A2BC3E8A2D3D35A0203DD368283DFA2F8ABB91C1233D4CBF9DBCFDDA77BC51EF883C96F5183C4595C73CB3062C3DDBA1E2BCC124C03C2940723C0300BF3C32ABAB3C836D87BCD9110FBD97E2103D8572CEBC0E76E73C68722CBDC088FABBDD94F5399E90FA3B4F1D6A3B4C29643C823EA1BB6954313C4722333D0342EABC11211EBBD1328ABCECD41E3DB3F51A3DD8F59DBA23FD7ABC02B1DFBCC886013D4C7347BB597C2A3DF674CE3C72721E3D262C0F3D9D44EBBC64F0533C601F96BC71A7B53C0A3482BBB5BB7A3B9E63FABC18C821BD7F55883CD743283CE0947B3B0BE5F53C972D97BC4C84803CA165C7BC5E07163C494E25BC9B8BFD3C5A4C1E3D37381D3DC949023BE07DD53C05DD34BDAB5ED4BCD068013C93388139061D0EBD153EA0BC7717A9BCDB5833BD931C8A3BB2CCF63C31F0923C3904ACBC483926BDD00A12BD9DE5563A1C0DF93CA09D92BC6400C5BCC221C1BCD2BA7ABBE6E72BBD51BD1FBD9831323D7DA9ACBCE49802BC97BA41BCCF061FBDBB4CFFBBF4A65D3C300293BC61E1F6BA26AC5DB9A43434BDBA8C033DF538123D07D7F63C2AC96DBC2730BD3CE09929BD892033BC154413BC29B57FBC680E983C3CF7A4BCC2D8A7BB6D1451BCFFFD29BD3026EFBBDB6819BD331BD33C0A7FC13CD593293DAE2573BC9D48133B0AD70D3C65B2343DBDEC253D8B5EBBBCA3071ABD8E2623BDDF57AEBCD932183D5D2E733C36A82E3DE02C063D65F5273AF661E0BCF7C3303D6035113DFABD9C3CBCC4C5BC719A0E3D1ECE833B6A64EF3C581A973CDD3EC03C12D71EBD5EBEC8BCF623D93CEED916BCB07B1DBD6D9E243D6A897ABA7F06123DDD7C0DBD9D4B793C5F5E88BCF75998BC490517BCD40186BCFD61C63CF59209BC8740093DE538253C13C3DFBB021DD1BC28C125BDC13A53BC2FA127BD792606BC4A5A3D3A36A63ABBEAD6B1BC2347FB3C94E4CB3C666532BC290B8FBC329CE33CC17D1D3D8FBF25BD8E711CBC536486BB7E1483BCB1891A3DB1E8D5BB1B7A193D6F1765394B159DBB812DD3BCA7C270BCB551693CAE24A03C301ACEBAA47B2C3D2F94FABC7CCF8A3C2A0A233DFECEFBBB80B60F3DB7F93E3A2F8E07BDCF9EC6BCA4C1863CFEAB9CBC0B262E3C532B323D74F4753C518887BB99FC343C1996D0BC201A18BD791208BDCFE417BD4498143CC1090D3CD7DA99BC6D1031BD3A1EC43C926CCDBC21C4F1BB0CC817BD413FCCBC2C07973C1CA928BDE572CEBC36B7073DCBABB9BC1FAA96BC4A4D4BBCB9C19A3C827CEDBC2533913B89DB933C9D4052BB3DED023C14170ABD6FADA33CF54D873C27A5B5BBF5AD15BD7ECE903CC93EEC3C314BFDBB78A4AA3C6431863CC1CD90BC121049BB9031343D19C75A39A81C10BD133953BB911CB43C205B6CBCFC97BDBCAB1E153DD085BF3CFD07F6BB27F8133B292999BB181B283CE8DDCD3A0F15DBBC2327063C2981973AAF413B3BF3F789BC6586393C6D6112BD8771583CB52FC43CC05F9FBBA89D0CBD077528B9E990833812701CBDBB0800BD896E273DA15E073D97A4C83C31CEFA3C185F8B3C54C0CB3C3BC9EF3C672629BCA617B8BB4013013DB68285B7DC92EBBCB85C0CBDB47ACA3C1CF1153DF3940C3D2000F13B83E8F93C2B3326BDEF6A02BDAC2E2EBD44D8113DF0A8D1B9BEB4A6BC2902753CE28587BCFF30E8BC41A38B3CE393043C9CA101BD0B76EEBCBCBFA93C95A4093DB2C76B3BBAD8B5BCB7D1AE3CEA90FC3B8B7A1EBD099EEABCD87B1E3C3005E03CAD9E68BCCE0EAF3C1537E0BC36392D3DF8FB003DFB9F073C7C11A13CAB177C3C54A3D5BC720BCAB93215413C3E6F23BC71962D3D859D8BBCB2A921BDA45BACBC550028BD2D2B153DC485A2BC81B8FEBC308B9CBBD9F1F3BC901EBDBC2B92B83C95E807BD12BCAA3C9B01043DAFE3CFB828C2A03C90CCCABC73290D3D86D92F3D3D112C3C63F5243D40C833BD31029FBB7FDE0F3CF2561DBDF42DB03C6AFA89BC6DF182BC939F0FBD0202943CEDB603BD3FA719BC35D4A03CC75E083D6FBB233C4E0E87BC6B799DBCC034CB3CF957063CFF61183DB456883C71D3113DF0DD11BDCA86113D1657A6BC08D341BC20AF8A399DC907BC073A0F3C464E213D1050D8BC08BB5F3C6B7C11BDF561E33B3420153DDA1DF43CA8041B3DF6FAC33C41A06FBBDB0D3D3C904797BC41A7193D4546B53CDE7D04BD00851C3D53EA2BBA4FBF00BB552B46BC710A3FBC1DF6103B56BEB0BCAC6228BD007DBABCE31610BC1DB2083DF72A053D93EAD8BCC66BDEBA09FB50BCE5ADC1BC7DA7FEBBBB3C7BBC995CCA3C7B8CB3BC7CCDDE3BBA4DCCBCFBFC61BCB3800E3DE5BCB1BC24282EBBDEE12C3DF6D3773CFB46B8BC7F5ED9BC4BEA7DBC87BE62BC7CA09D3CFAFA20BC90AB183DDBA4C6BCF36B62BCA8CF833C6A92103D6E292D3DE2C9E73B4B2AF43AC734A2BC038FCC3CFADAD1BC16523EBC9D4B17BD8E052EBDB85CCA3C57C4443BD54D103DEC0A103D20FBBD3CC4E2903C1DE93BBC7148C03CBC17AE3CE1A87A3C0237A7BA7A4FD83B9D9B4D39CF5E03BD1916283C551305BD62A9AF3CC3B4D7BC2D856CBCAFB2ABBC6EE10E3D52F4FEBCA5DCB83CC892B53C00FDFF3CA86B353C6B5DC53C86180F3D41A00E3CF832763C918B0DBD1A3842BC934E833BBF74AF3B3FD17FBC897333BDC44D3CBC6E9A8A3CD3DE1B3D3B7723BD8AD9AC3CB7C32BBDEF1B2DBD89B9E2BCEC46BFBBFA3A4A3CCFAA09BDEC760B3D4FB2233DFE32323BCA58133D86E6A3BC78388FBC8CE0BABBAC3B9E3B9F8DFCBCF0F210BD71048F3C57C5503CE815313D9C9B93BC70B37F3CB61892BC5FB8B23C017120BBEA30063D2923C93CC8AB163DD00CBA3CC4A0D93A5AFF1B3DAAA7D4BC24BC2A3DC6E3303D04EC2C3DA71DA9BC44D4BFBC9D3E373BE079613CC09BB53CFF3D933CD4221A3D126935BCF38C6DBCFBB5723CD0C6493CEA2FD3BC7D128C3B5B7009BD066C54BC27178EBCB4AD1E3DE7F222BDB6C1D5BCA42631BDBF9D363C1E540BBDBB446A3CDF79FBBC41EAE7BCEBF4B8BCB852D93BCF55263D2390293DBCD05ABBD04E31BD94376FBC18FA89BC16021ABCB1548A3CC630B63CD084A03C8DD84E3C399092BC04CCF5B9914DB83B05EDB8BCED8B81BB88C5B4BB85072BBD276FF53C7A6992BBE37B1CBDBC370F3DB9CDC2BC772D803CE784333DD913063BD651503C2ED98F3C13D0083DD6295EBCDDB9CBBCF2A762BBFD900D3DB007793B6F8CFB3CD644ACB959295E3C2C6CC93A0F3F9D3AF4422CBDD8401EBD42C5703B662FB33C4E33F33C4C56FB3A6E9B983C026B973CEE431CBD9C1A1FBD465A0CBD882E473A4AECE4BCD5B667BC13AAD8BBEF408D3C42E2273C61ED273D1C47233D0BF7E6BC6CFD11B9EF23EF3B94071E3D236860BC30488EBCED55E5BCD862053DFC224DBCB59787BC37DFF43C4291263DCC1BF4BA0934FFBCEA7D133D4EA377BC1FD6A6BC9785FEBCFA1DAEBC9DC40DBD50F9D0BCA9E624BD95F011BC1791913C986A09BD066F81B88B8185BC121EAF3CE3C81C3DC3F8BFBBC636B6BCBA160BBDA3B4D4BCD00E513C7C22263CF0F7C23C3A2ED7BB1107BA3C374621BD54A5423C7FBB2F3D902733BDB9F1BBBC1AC4E73CC86AE2BB79FBC0BCF3DDDC3C5C26423B38E1E23A52ED5BBC1B63083D63D2C83C60B6013C4B01DD3B2E35BB3CBE8DE13C3F8294BC73A99EBB71F19E3CAA6FAFBC1943293D07FFF7BCC90FA73C480702BD1B7A683C52DEFC3C0C93AE3B442591BBAE39E63CB4FA01BD4C41F4BC3A481ABD42DADEBCD257963A382AA4BC4650213CB578C33A98A7163DA1FB9CBC581546BC4073EF3C101637BC944E2D3D67CB8FBC50C3FDB9E58D2BBC71E8A83CB1B88A3CBBCBC0BCF68FEE3CBB0938BB5A1A37BC7AB169BA93F5FB3CBF91313D252AB03CDC66FD3B6247EC3C976497BCD733BDBC6F1A51BCF251EABC54AA9B3C558F893B53BB77BC210593BBD4B565BA26361B3D0197213D7D5B0BBD9FAF843CE5CC8B3C8E6E8A3CDF6DC5BB4715353C4C34363C972F303D747E2DBD886289BC9094F3BC3B9DAFBCFD290E3C2DCDDC3CADE308BD6879EB3CB134173D9073B2BC48C2FC3BCEDCB9BC74161B3C71D9A7BCAF088DBCCC5AF2BCB9F316BDBD74103DD5E0B6BB1EB3A0BAF62CB4BC9057FC3CA738CFBC516E92BC6C4E0DBD333718BD31B5203D48C80BBD11EEC7BB709751BC3D9C843C14AB413C8DC40ABD9F91223DB85134BD273B8F3B0EF871BB51CC27BCA3B7F63C70D6183D41A4BC3B4FBE7FBC2994063D3A75E33CD70C023C1D0B46BC6037F43A6957213D650B9D3BBDB00EBCCF4219BD9E02C2BC0CBD023D99FACBBAC3DF40BBB0F68C3CED31EEBC4AA743BB63A64BBC1B6DBD3C6051133DAC53E33CC2F5063DFFC621BD9F8780BC107CAB3BE8BF19BD216C443C4A4FEDBC59239B3C2782123D53DA1ABD0BAF173D80EDA83CCAEAEEBC85442D3D5CC71CBD47BBF3BC3618B4BC22AA12BBD005023CD47E54BC24942BBDA929A7BB9E57093DA05F0B3DD13BB53C8B41D23B32EA333CAE8C0BBD919A923C2C2834BDD48295BC12493EBCA7ED043DBCDBA8BA78E9A4BC5801FD3B583416BD70B43FBCE788483C62D13FBBB21598BBE044DD3CE38109BD77CDB6BCB7382F3D5715103CE178EABBF187BB3CFDCBD93C01FDF1BBD8CD96BC41B6ECBB9375833C29E0B8BBECB4D23C5C9E13BDADA0B1BC8CFF093D61FBBD3B04CF113C4A256E3C34182BBC35C890BCF1B94F3C26E73FBCB28E95BCA753BF3B0D242F3C98C182BB55D8F4BCD4F6DABB622DCDBC098CBE3CFFE2EFBC5155103D1C32903C8B021BBDAA55063D3E0433BD1E6528BB9A0AE2BCF9B91BBDAD7B8F3BA189AFBCE5D8023D134D0EBD0C40163DB66ADA3C2D8C1E3D7A0854BCD5E9DDBC9D86F0BCC487163DBA11B4BCBF4EB2BBAB36DFBB2123F93B6C8A14BD87F6113D74F105BD130B323DF7A88DBC429FA1BC6E0DC7BB8E4B563C152906BC83AA34BDEFA6FE3C2B4C333DAFA8B63CD621313DF758453C39F462BB592E10BD38361EBD3443F9BC10B737BC51D1D23C105F95BC15FBE0BAD58023BA33A8ECBCA1CE9CBAACC82E3D37AE103D28DE093D85D38EBBD8764D3AF5EBC53CEDD870BC4DB992BCCCE01A3DAE5A253B6F73F4BC2087183D585CF03B26B6C13C95371DBD455E063CED70DD3C09EBD0BBD0C8CDBC8DD3103D4D64A83CA8384E3CF83D2B3C69B47F3AFD9DCF3CF8491EBCB61CD5BC683E8A3C402E413C81D8893C20D9A0BB2D2DC0BB1A3266BB3BED3E3C21E80ABD85B828BD3179873CAF37C6BC45A573BB25BC483C061ECB3B8064E93C44D4BD3B7F43333C2BA081BB09C3D53B34C0843CEFFCF63C9B842BBDDDCF96BC836F22BDBE5790BCFEB0DC3C23842BBD553222BDF4A0D13C19CCD5BC074D043D589D613C5FC1353CD4CD0F3D66AD27BD418F043D0CD16A3C089BF2BC3D2D303CCDCC49BC9E5191BC12D79CBB45B0AABC3A4A1E3DC1CD1B3D597C9ABB138620BDDE2E31BB455C3F3B88FEF13C525FBA3A65BD523C8A1F403CDA6BCDBC5991E0BC28CA21BDF4F3B5B9A144603CFFF04DBB97B52F3D77200ABC703DECBC5C5CF13B80E84BBCD086C6BB0F662F3D6234A6BAC1201E3D0265C13BB0AF86BC4CB7043D483ACEBCE7A8BF3AF6C0223CCE7EA23CEB0427BD9A140E3B577A3BBCD3BBEA3C859C733CA11A913CE7ADD93C6F1B22BCAC9039BB3239113D4DE611BD8E3FFABC30E1533BDB698FBCE2DF253BBEE71F3D18E0A7BBE5571ABD1D93A4BCFD3D263D75121FBCF6BE9EBC95F6A23CAD46B33BDE991FBD20C0163D79DFCB3CDD561D3D896D9E3C212074BC805F6CBCB373AF3C7D5D0CBC39F50D3CD5672FBDBBF6B2BC777A863CEAC80EBBE30CAEBCB4E51DBDE618E63C099511BC83DB31BD06A52E3D7B2DB03CAA8CD8BC141D04BDDAEB2E3DD47C4139F9BCD9BC7F55D03C1AD316BCEC67463B1E99BCBC8B5219BD2770F0BCFD029FBB6C0C03BD0C6A323DEEC6FA3994998ABCC1158F3C707C20BD102EB9BC6BFB873C2DCE19BDEF70B43C2773733B6BEF16BD40A633BD59D8643CCB1FAB3C66BF10BC3C1120BDE1A8D0BC33EA993BC6BDD23ADA58393C0E08003C5BD017BBB20EBF3C5A972F3D61C1163DE77C243DE56074BC682377BCF52AA0BBE701563CA98B923C381581BBABD9E9BC3F9408BD4B452E3D22AC42BCCDBEC3BB0CE1DDBCF77BB3BC3E091F3C5C7C983C551F8FBCA34185BC69650F3DB974BABC470E07BD4DEFE1BB763F2C3D1B8D1D3CA018C83B3250B4BBE13BE23CDD71B3BC5777F53C1A0F2B3CAB02A13BB65CC73B4347DFBCBD71063D4325BE3C11940DBD358B28BD0A663ABC6C85F03C3B3EB2BC81C6273D3706B6BCE48323BD9C419F3CC0CBDABCDF48E4BBB3D761BC6E2366BB41BC1DBDFA0726BDCCA19B3C2B19A4BB8C64DABCA69093BAE43825BD6833403CE9EEAB3C388E2F3DB97813BD6399AFBBFF79C43CA9E5253D4ACA00BD50DA993C0779953C3643DA3C6698F9BCAA2D013DDEB09DBC3ADADEBC4EC50F3C4859193DF3BFEFBC9C4BC13CD4D9A5BB0C27673C34350D3D079A443C3D4616BD94005ABC7AB60F3CC7B418BD5FC1F03B4D67C2BC19EE0FBC1D84813C1CB011BD1D6FE8BC9C20A53C150933BD9926F93C8B940BBD2A8B3ABA2DA4143C93DB8E3CA9B4E0BCE0E1C23BA6E39B3C13431B3DDB3908BDD8FEB3BC7DEF523C6FF5B9BA4250F4BCE55A18BD7DBB20BDFD55FDBC0B259ABC4366FBBC77CC1EBD3815623BE251D43C4EB2AABCEECF903BAAD10EBA9C3AA93C8813FBBCB881093B69F6283DAA3B013D4B6933BD2701DABBECFCD73969166FBCB6DAEDBC80EAFBBC1890F03CDF6A6ABCBE633ABB7377543C3D37DEBCA113813B5A58D73C03AED3BC3EA9523C69DAC5BAD60FC73C4A91F03C0F1A403C3C07AF3AB6D31BBDB125903C00B9DC3C6A8083BCE7BD33BD13B1123D17F629BC29DE103C518B4BBCF3E1E63C5F8B303D99F0E23CDE6E66BC8AB6FD3C73A6B03CFF488D3BBECE11BDF9749BBC1E1933BDC524F23C9AEF323D7FE4D23C545B673C22212B3CC9412E3DC68BB7BC571773BC8A8822BDC6668FBB83AC463B7F35463C55DDFBBC5894A7BBFD2815BD923F13BDFFC1BC3BD3B330BD54CE403C38C126BD75EAFBBC413E16BC4DBE2CBD7332123DC051143D711ABDBC04AE173CBE35B93CA117663C20FDC1BB4DBD2ABD4EA0033D7FC51EBD541906BC95A9333B16786EBCD86A84BC1D731CBDA0951F3B496EA4BB27D01D3DAE616EBC9DE90B3D841C093B53A8A2BCF5322CBC9956A4BB3701F0395696EEBBFCE2563C8512153D45A0E33B9122833CF590DF3C83131C3CA5E3A63C5AE8BD3CBE6F293D3E3525BDE3C5773C693C03BB8C0902BCC5948BBC69A8D93C1E98253D61BA13BD2D9AC33CC6A4F93C8519FD3BBB78083A8F4C0B3D22BEAB3A3E9A34BC6DE055BB314F683CD143353CDC431CBB2791643C5002433CE7A212BD596C343CE182DD3CB913A63BD12E84BB9FAA0A3D37271EBD673FA5BC5CA3A3BCFF681C3DF9152FBDEB9F8F3BF9592FBDAC7BBEBA03F2863C2A5429BCCCB82F3D298513390694B8BCFBB63A3C8548BC3C9122B8B879DB1A3DDD23E5BC5E799A3C1794CD3C49D2B33C48FC87B7B9B24E3C00030EBD530E0EBD4D0634BB6E80B5BB5869063D6871033DBE7AF53C5DD3A5BC5D1B0EBDC2CB29BD9506833C021D23BD3FB434BD98F7B6BCD7D518BDCEAC8EBC91EBE3BC08BDB9BC78192C3D357308BC9B29163D0886803A3A39BABB38FF53BCC56501BD8B7011BDF7AEFA3CA2215FBC7B7D30BD7620263DADE6563A2342F2BC784A0EBD700418BD4DBA1EBDE9CE233D929FF93CB0E36C3B33471ABD39623DBC710C2ABD1888793CBA4140BCD5F21ABC02EC61BC0BBEA93CBCF7C33CB79D1E3C5858B5BBCB1C8FBBDB6F4ABA71CC06BD1AA2303D15249CBCF5A2D23C47F5CABC038C9B3919DF773C5B3526BD2C11A63C708F0ABDA815CA3B82950FBC6B87CF3CD1EE2F3DA72E233C2567A5BAC35EB3BC29FB863CE341AEBCD58B953CE4EA9CBC7093F53C2DD90A3D25FFDD3C7A19E839A5E4A73C62F324BD43CD123DC81F3CBCCBFB833C7C3AF5BBBE2273BCED03AABCF285E93C85F7C4BC2260FFBB64A1B63C73F4913B404F18BD450034BD7103B0BC05F5263D9DB500BD4488C73C9493013D671096BCF4E09FBC5C3B02BDB5E2E13B7672CABB77B70C3BC3099D3C8EFF973CBB7164BCF9EB463B83002C3C339B763A30E5103C7CA892BC7560143DA48994BBDB48B9BB977722BD143703BD7730B43A4BF6DFBB9706B6BC6682BD3CA6A581BB40A67E3C6C77183D3972A6BC752FB2BC548011BC314375BB0514B5BCEAD62DBC5EF7A6BA7E65A23CED78273DE10B063DF143993B1D8436BB7279393CE176ECBA1A0DBEBB20FD783C014713BD0BF219BD90B53B3969775BBC7312B3BCC68428BDE383F23CF5CCE6BAAF83C2BC6D7993BCB75C3E3C124803BDB9043A3B09DE0EBA89AA763C839E8F3C708CECBC32539C3CE3B0083D7B763A3B3371B83C351089BCACD20F3C0293533C1F38A7BC6C87DF3C3E272BBDABFE87BCE404D5BC6AEBD6BCBB60DBBCA6922ABD1587F83B0F3C0FBC946B18BD4B7898B7523CF1BBC059953C39CA0DBD89B34BBC3E0A153CA276993CFB1A5B3B4339443CFDF3343D41D47ABCE0BEF63C8DED1B3DF52120BD70262F3C9B13CD3CBDE4E1BBFDCEC73C8407C53A96CE093D7572793A08C9E7BC1A79093DFD57573C76011A3D54BF333CC13EC03C39BCE13C98D9F33BC15228BC058C153C746EFCBC05E5C53A9BBA68BCFF1D373BD9520FBDBF36DD3CBE0227BD390A9B3CA16CEE3C4AE725BD848D233D1F9106BD3A2F0EBC919BBB3C619B65BC5C52213DDEB69FBC9CE2C1BBC9A8ECBCD9F5A7BCA0A5303D5623083DC541553B45246E3BB69C19BDFEA8083D9D1ED9BB0D0197BC2C0F10BDA9D4143D99ACAB3CFC10DA3C26F3953B31ABF5BCB34D943CB203A73B69FB723C254D34BC00DAAABCC29A143D08B9723CCEEF92BC9751813B87651DBCCBAE77BB3D04CB3C9D1310BD18D4233D19ACF33C9B461F380D1694BC1BA2133CEDA2EFBC9A29EB3CD077BFBC565A0A3CA91732BD045FAD3CDE14F53C9BDE073D5B696C3BDCC2D53CD8E1763CF8C9F23C1E4DCC3C00611EBD74AA983BB6D976BC40DFACBCCC69FD3C2544CFBB00F6E03B3FF3E33C40B2F33CBE35C13CF9D4FCBB145C21BD9BC62DBD4F99633CE37B09BA89BDE4BC391D9E3C374F243DE164D13C044ACCBB95AEC33B7DEEE6BC32E1AA3CDC470CBDE0F2F93C625CA5BCDB968FBCB79F17BDCD182FBC2B148CBBF4DFA6BCBFDB003D7EC6CF3CD8C21FBD2CDC90BBBD71733C9FA52E3DD8222DBC3244DE3C754222BB7FDB8ABCB58DDD3CF74D21BD77A8173DACCE343DD3B045BC62038F3C6583343D5F4C5A3CCA948D3C36F0843C861E94BCFDBE303C02F5C0BC30931A3D83239BBC1987253CF1BF51BCFF0DB53C89F63E3A7011C73C6C1144BCD272D4BC98CD8A3CA2BFCBBC579F14BD9BE08B3CD0BDD9BCC61488BC78CC34BCDFA84D3BC1C67ABC644C82BC0EFD35BCB8B6FD3CFFCE583C954CAEBC8640FABC6137863A1CF8673CC36E72BA16EFD33CD941183D7338543CA7CC6E3CAA0AD23CDB0D78BC1C70003CF059123D085EADBCCF6A613BD68A8DBCA8300BBDECC2BF3CEFA4103D0B96C3BCF8AF873CA5085E3C025D8D3C0D4AC73C81FF283DCD64093DD0641EBDD5ED8DBC9D47C03C71ADCEBC702D0E3C1A359BBC2FCF0F3C42A7B03C0A96633CB97F033D8B43AEBB538AC43C0A166A3CC23164BC1AB2FFBC609C253D84E257BC2C59083DC934E43C4842E9BA028615BD822A693B5104AFBC736A3C3CF7E78FBC69850B3D7A5223BDC5EC42BC315FE43B4C268A3BC6B6143D5AC864BCE07F10BD22B3EF3C36544A3C8E7DEE3C4B46D6BC4BA4D4BC933E92BC84EB4D3B3A5C753C170CD0BC625888BB2C4AFABB2E2B253DD69082BCA56B2F3D9A0CDEBCA02E95BC062708BD645B053D5BF7F8BC1CDC953C220985BC3063343D9845CC3B42331DBD923BF93BCC10B03B59152FBDC750113CB5B52C3D4C5F503C7B7176B9531A16BC9B6A403C394BA1BCF742323DD07B1C3DE721A93C06DA86BC0FF829BD746AD0BC0F01303D5D2726BDEED62CBD6BBF50BB8B5D663CC92A34BDF00F28BD09F27B3956E172BC9F39FC3CF9E34F3CFD201DBD872723BD74A1F83CE86400BC5D609EBC0D12643C7F4E0EBCE124AD3C6D9E373CD1C09CBCC81511BD9EFCC33C4884D9BCF92BA0BBF300C63BCCB1D2BC1C36C53C4DA7FEBC8AD6313CA4E19A3B01D6843CCEA731BD854E273BFC7EB03C88C8E7BC7E2C333CC99335395791193D315219BC4A4C9E39D2769DBC737332BC67494F3C4A952EBD9652093DD42B023D6152993CB782073D436561BC47ED243C5159133B0859FABC272F8BBC078780BCD50733BCEBBB20BD3D9EFEBC4D8589BB3A4CDCBBD35124BD33B61A3CC920C53C61C1163DB858183DF8FAFCBCC90D68BC02C0ABBCACCD043C9907423CEB18213C8E90D33CE600BF3CB852C2BC7388F83C4E38F43C43A4BF3BBE7D1DBD2B0CDEBC78C8493C17587A3C9FCA283DB842B83CF237833C9491C5BAFEDCF63CEAC683BC0D69933C356FACBCA243D8B983F6D53C231FA63C827C22BCBCB112BACDFAC8BC1FB2A73CEF9BF33C5B3E793C642A2FBD539501BD715EF23C6B5ACFBBA056DE3C3D6E053D331A54BC806AD4BC484D2ABD8E7C8A3C13AFB93C8B0FFBBBF6BC2FBD6131E9BC080E1CBB523CA53C2CA072BC7FB7E9BCD40AFCBC9DF6213D3A1A833CFEF812BDCF95DFBC99AA19BD9585D13BE80293BC6CDF1CB97418E5BB2D741EBD77C321BD5F670CBD27A097BC063DE13B2642AABC007ACEBAEC76ADBBA68C253DE40AA5BCE2122A3D53F70ABDDE0717BD21776B3C6AB4D2BCCAB2B93C034CC8BCDD8B0E3D92472F3DA36B393BECBF1A3C9BC4283D589FD63C18071EBD7E6DB9BAEF6623BD3C470A3D54A004BCA782A1B9CA6EDEBC2CDCC4BC39F1BB3B975A153DD3FAB5BC65D7883B23DC233D613B223DB58F0DBC96A9293DDAD7833C9EDD243D6CDDAB3AB76919BDC11845BC3F2C593CDA10C13C395534BD49CE0C3D586322BD3B20D43C0B9B323DF66F323CF4A708BC2857C73C6CE856BC411606BD9A7700BD5B39AA3CB33F0A3D278FEA3AB8832FBDFCDE31BD868023BC796FC33CC542F1BC1B2B433C27E1C5BCAC47133D13BB3DBCAAE516BCBDC41EBD332322BD11BF433B6327EA3B0199C33CE0491EBD1DBFFD3B1E33D1BBCF5ED43C159EA4BCDDB8573CFDE3913C9CDDB53CC85978BC1404693C08E80DBCA5FA423C639EDEBCF3D60FBD441214BD5C96E3BC8B3999BC8A8FD73BF7611EBC9119CEBC1BA5C23948A964BCF12BDF3CA81615BDB1A185BC71A8E8BC6BB0B23BA9021E3BF29C26BB509B333DA41C8ABC6224D0BB16123B3CB514173D5935093D5D6FA53B08F888BC70DF6D3C1ACAE33C8B3E77BA7BC5C63C6926143D0BF8C1BC881320BC78F922BDE136263CBE02013D009C0CBC9914E73B065E673CD51A77BA58BB0C3DF506D33BA3EE31BDB67B15BD025933BD30C0EE3ADBB4C33C440EBFBBBFC1223D7D4302BCB209143C853B233D8D39B73C28CDB8BAAB5C2E3D244ED8BCBFD9863C0BA4E43CDB2BE0BC130A2ABDDC9A673C7A5A89BC25B3B6BCDA05103C085103BD3ACF223DB3FE81BB34E367BC2A54173DFC9C493CF0F3093C151AADBC63862C3D00885CBC2A8F163D42E754BBB99CB53CC08EFE3CF3C406BDC84CF1BC710033BDFE8F023D8EAC1B3D6A5084BCAB51B1BC2D68F23B04EAC23C5CBA323CA7E716BC9E48E6BCEDD11A3D1076EABC37EB2EBD578D90BC0963103C0491863C0EFD8B3C82BAD1BC60F28ABCC3FDA0BC1752AFBCBF7718BDE737143C049352BC723B2EBD8F66D3BCBE6BD9BC852B9CBC88B4DFBC4C23FBBBBEBD813C608012BD7C1C78BBCB6150BC6218B9BCB6C720BC7C7199BC4138BA3A37AB02BD2E50093C1F33263DA0FE153DC752A2BC5C2E5F3CA8192BBD7568183DC26534BD7DC321BDFD7C22BDB51A28BD961FC43B3E783FBC5B4E2D3CE93433BB42DD78BA3FCC82BCAFCBD6BC388F17BDC7ADB63CBAAABABC114313BC1DD7AF3C895333BCA49036BCF959F1BC58E11ABD3EC4AD3C6F5D23BCD5A6E33C00A03E3BC8716BB8A86C23BD80C77F3A9DA323BC7A97CEBC319427BC5B6A173B166508BDECCDF03B74E9FB3C190A0F3CE2CA2C3D48F1A83CBEC20EBDEB808EBC7C3E2EBC359A583CE236A5BA68AA113D073AA83B6D48E5BCA5BA84BCDF9916BD46A647BCB2FFB13C2FBFDF39EE9E2CBDB9A21CBD7641833C92E11EBD766210BD54DAD7BC68882C3D68E34DBCDE4495BC0274F4BC4499E73CEBD4E9BB9AA00B3C8CF92C3C88354C3C9FBCE73CAF4C163B27CB953B2C163CBB09AA0CBD32B425BC32492C3DDE4A00BD647CE4BCC4A033BD25A02F3BBA4F29BD206FB9BC74CC263D97F1953C48E2C03C1DF8F73B99D319BDB876A8BCB68B12BDACDEDFBC9294763C6AD348BC4EE7303D90F403BDD47B1ABD2BBD323DE85F1CBDF7081A3D5CFA423C85FD24BD02AA1D3D392045BC374895BC89360DBD4E1D19BDDC36213CE0CE31BD66C5943C18ED32BCAC1C7E3CA74831BC3C667A3C523B9EBA8FD1543CFD4A93BCDE06F9BC0D6EB83BE214E7BC6D6EE0BCF90F2EBD4BCC66BCF7E8F1BC28F80C3D8973023D51CC2B3C4214133DA453AE3C38862ABD30E590BB5911EBBB0CD1DBBCA1394E3C81FE61BC861EADBCA20D07BA6DB5F0BC27D2153D4E17E53C0C5A2B3DA13F00BCE77A6C3CB2FDE8BA31CA15BDE1CAA33C92E1FCBC6DB082BC3321A2BCCD9830BDA2C5CF3A053EED3BF35257BB9D21053DF1DE0A3BB5E303BCB078C5BC4304D7BC97E2CDBB677BD4BCBED3EEBC5989BFBBD9B1FFBB23FFDCBC1389D33CB184193D23D9F6BC88939E3C5CFDA7BC245E96BB7CFB283D4A4EB93BE0982CBDB768263D0E15F5BAFA48B5BC3D32BFBCE33A1B3D0787433A73F7C73C26F1ED3CC4848CBC08D5753BC82FEABC2E29173DA671BFBC3179F03C6F75373C7754DF3CDE14FFBCCC24B4BA0798BB3CD936E7BABF3A26BA536CB03C4F4B07BD632B11BCD8E7A43CB88FB13CA920283DF33B0FBCE28F2B3CFA21B2BCEF0CF3BBE4BFB5BCDF25063D73248D393148933C5123C73C3BEE063C671C9A3B3CFC53BB415619BDAE52E93B446A20BCE22618BD1CA7283DAC629ABB4EB0B4BCB63930BD2BBA26BD94DD893CB345A5BC16649CBCBB7BD1BCBD1E123D590F2EBCC1AAEA3C32B50F3D37580CBD6F0C073DA9440ABCEC5F2D3D50ECB83CAE592FBDA784063C22887E3C715683BCD344093D1BE815BD08C165BC097B2C3DC3CA303D83DAB43C1C1ED8BCD0BF1BBD612E13BD9B0235BCF017CD3C373E653C7DDDAFBBC2CC223D10260E3DDE35A9BC79C89CBC5FEC07BA4D42163C2DDFA5B91EC58B3CADC9F93C598F02BC53CBB13C00F5C43B25F88A3C510B953C858841BC256BA1BC7EBF9A3CB7CBE7BC3712BE3CA44AE8BC055FF83CA143913C536331BC62F0CE3C20756EBCB3421A3C842F553CDBE5933B0B68113C99FD65BADA2E51BC22FCC93CA0CC8E3CE609873CF66AF43C056DBDBC173B28BC4F1BA5BA6E14123DCC2510BD47AACFBCAB792CBC7AA01ABD93040FBD0D01F83CF31B073B36A011BD301EEFBB6C71BEBAE8B580BCD26917BDDD08C53C24DDB2BB32BC303D04A30ABD34C1C6BCCA7816BB751DFCBC03EC033DA3FC0B3DDDFD233D868AE4BC9CCB003D2160FB3CAC0D90BC1EE89E3BDA84AC3C1A89013D4E1229BDE237343D8C0C36BCC682933CB5DBE0BC5E4D0BBD6A2FF5BC875ED53CE294B2BCF674D23C1AE65A3CB402903C630D21BCE20A65BC0A64A9BC3E5ECABCCEE7263D30671DBB4A419BBCD96B28BD4CFFFB3AC5AF33BDA66B08BA0F98E43CE385D0BC22EBC63C3EF966BC4D390BBDE14933BD76DAB33C1E7F0ABD6DC6B03C5758CF3B16C4C43C161208BDE34C1E3D094D34BD6A6609BD321CD93C27DEC43A214CCBBCC3E217BC6E1821BDF28A1DBD14591BBC4D170A3DFA3D583C368A083CAAE63FBC42C2243DF5E8DD399B7C743C4623383A87FAE13BBC74713C27E90A3D7264D03C3B55B93B38BE903CB2C059BC8D77F73C26434B3C9B9C083D3B1BE2BB43CC13BDD0090F3C553F933C7444123DB1528C3CBFC3853C5E0E103D52D678BCB7D31F3D7A9DB93C30C9F13CE819013DF9E313BD2592BC3C1197283DFD56FEBCC63B78BB2CF3DCBCEDD72EBCBAD0D73B5CA8C13C073652BC47692BBDCF7CC33C621DCB3C1A4403BC6DF71A3D008C0B3D42971FBC83B0DF3AC917FF3BADE30DBCE66232BC946CA3BCF1E2CDBC94CEB43CFD0157BC10AFADBC80751F3D5C89E73B059C023D33F6243D7A00CCBB3203D83B82D4273D6718F9BC221959BC0312CE3B9A7E44BBEDC6403CBA5EBE3C0EF394BC5385613B52C5233D57DCCCBC1A82F5BCF4D20ABD6B69D83C660926BD4B0FB0BCD384F43C0409D9BC2235133D763DA9BC2919E53BDF90BD3B65158EBA657EE13C61BE193D160BE2BC190BCB3CC676413CC2E257BAEA23FDBCFEC9563CFF63033D41601BBD5F2E27BD0BF531BD634E273C730D50BC1CEB60BCC48E283DE6AF38BC67E9E5BC6C43823B84B5C6BC8D2654BC473DBF3CD21C273C3B70F8BC5C562C3D1DF1F43CD9CBF6BCA0B29D3CC5C4943CFEE301BD3C70FEBC6DE315BD2345A13CF64DFC3B1E01993C45049FBCDE1C083DD6E9B83BB57010BD354036BC00C3B83C4C361F3CD38ADDBBD7F0FCBC7B36E1BC93221C3D8263CFBC2947003D2D5C72BC329AE7395A4630BD225F6BBC7898183DE38422BD002AB63CD25718BD9D37D33B641E24BD164D0FBDF02212BDF2127BBC4E2DC53BE4B704BDE681373C5A0DDA3C1691133D6948203DC05CEE3CE03655BCE57585BB4C29203D6D19B43C1D0540BC5FAB083D82321EBDBCED1A3D1390CA3C4BC504BD48A413BDD28F0D3DEF93323DAFBD7C3B19768DBC4326CE3CDC54A33C96BBB4BB5BED103D0CAAEA3C5A83343C11FBBB3C678F29BD0295A9BC93BE9E3B5CE8443C68FAC5BB85B3883C40935C3C7E4C27BD2063643C367C6BBB9F22F9BC4E7DC33A3C1432BCCA41C0BC96F324BD1D6F173D64DDDBBCDE80C23BBB03113D3371B6BB0349EDBCE8202FBDB59DF03B45A8B5BC4E37533B1F49673CEF274DBCD87AF53CEF72BCBB237C90BC1161EFBCB1AF5B3C0DD5DFBC0D35183C7AC5B6BB1AD0F83CAE7CB1BC2A59B2BCDC26BBBB6820DDBC6A068A3C4D9D84BC1989943C0B1ED23C3268D33C50ED04BCDE93C53CAAB5BFBCC65B34BD1CD289BB474003BDA23D0CBDC40E383C74AF1A3D6B798EBC7BD623BBC32503BDC21AFD3BAA6E4E3C9E4CDEBB8FB9093D78B011BD034CC2BBFAF4C8BC23F21E3D7453193D750F323DB98B263D48638F3CF09B0ABD9A93F5BC07942D3C599D21BD6133E53CC7649D3CCAC22C3C67FF1DBDA1AE033D294499BBD4EC97BC2206BD3C2CC1743BA50CA1BCF578293CA96DF1BCEE3D283DB7A91E3D36F7A63C4B87BF3C8CF133BDB540C9BC60302EBD5AB2BCBC141416BD403E053D0653C33C9535D53CBBB8A0BC7AF8093D0E42D1BBA7993BBCF2EEC23CDEC0EF3CA81A02BDF3552C3D5A2992BBD2D9403C613F34BD7037A13BC62DB3BCE9AFE2BC1D2997BC65DC57B9AB464EBC7BEBE7BC689B013D9469573CF37628BD51E3173C73DE313C5BDAD43A15D32F3CE07D72BBBF559E3C2BDEFEBCDE5D9ABC4A9A073D324CE0BCA8A0B13C007E273DA98625BD5E9C9EBC2C7A1A3D93212FBB54F10E3CCA19CE3B2132953CE02B95BCB100BC3B259DF63C1B5774BBCA1326BDFC477A3CC7D838BCECC118BCE1D0BC3C50CBFD3B1C04DBBCF311A7BC2822DCBBF1E432BC774919BCE974F7BC9A22033DDAC2BB3CCCE40E3C53F2233C6788A93BB55A073D50D8233CB399DC3B4204C7BCC88B713C1F5A29BD995D643CD7E71CBD6CD695BC5A22BF3C75A2D7BC0F24103DA408C8BCB9752B3D5B2B5F3C16E49CBCBCCCDC3C354F20BD2159E5BC21D2E2BC91A2BE3B64458E3B2FB21BBD32AD2E3D002731B8D453C1BC195D8A3A04689BBC64C4473CB50F833C81644DBC70D9283B796AD73C357BEBBCE77521BC70A3D5BB8987EFBC7BE56B3BC9E4D43AEA3612BDF488143CE2C62C3DEC90C03C3062C4BCF6B2253DFCDCF8BCB713B8BC58B19F3C2502103D86BE2C3D0FD81B3DE45AC7BC2DB0253C4554E3BC0FD77F3AB4F9153DCC43B23C052627BDC0CF9BBCC3BB18BDCA8BAA3C05D6B7BB4C5404BDE25F67BCCA9D6D3CD011863B0DDA293D98CF19BA73C3633CB4575BBC31CEAC3BFD82CF3A027E1B3DB1B2973CAD52CEBC98D820BD953A2CBD327A83BC2C32BB3BFE4B2A3DAD498EBBC38D8D3C4AFFB73C2FA90ABDF4BD15BDA82E893CE4BFA83CF493A8BC06F0E23BEE3C31BD5207123AE47C313C6652DB398FDDE5BBF3B0963C500647BCE9BF063DD3EA1BBD6AE7CEBCF31E17BDDFB623BD0533063D833033BC10320EBD3C2E163CF41309BD48B8153B511BAC3C691C19BC8A1DBA3CEE9C143CD84111BDEE820E3C9762E93CFDDA27BC2FDD883B3CBFB83B490F793B1B393C3C92512DBD9657093DBEE69D3C5DD5B23BD1C0033C7DFC11BD3DBD4EBCC0F5FBBAB21E2C3C7C99C6BCD2A7993B39B760BCA1C2033D46611BBD3561973B7D47F53C30980CBD3E06A6BA9F4BA73C7C17923CA44DAA3B5859923C4260FCBCB2C4163DAF31813A4606EA3C292E203C7D1AA1BB21139B3C7DD72B3D7E8F323D525F18BDCFA82F3B3D0A02BDF6F0D23CE9F3013D0139FEBCE16427BBE385FA3C2A6BEF3C591A08BD6E15F33CB73000BCB1F319BD4C3C103CFDA8A83C471FD93C8C28F6BCF21B03BD2740F3BCF82BCD3C1D351EBD9D62C3B927C754BC58119E3C7A320E3C18D2B6BCBFF1FC3B1496263DF16DEE3BF767B3BCBCEFC13A1E0A26BD5848E8BCF37E06BCE19AE1BC364A193D048D0C3C0A350C3DFEE024BC0067C9BB26A5363CFD4B57BC7ED176BC569331BDCE5E083DE8D3233D353B33BD2F916FBCBCEB08BDF2F592BCDCCF093D7DA9C13C01BB60BB99A09A3C2E3D583C36B7C53C9A7711BD48D15F3C32712BBDB019EEBC4AEA86BCC4178DBB2CD42ABD7E29903A1435E73B4DAE8FBC58DB6A3CCD2D1E3DB35DF7BB65D0C0BC215A20BD4A2E04BD323DC8BCACD205BDEB558EBC0E71C73C6F94623C3628233D77B9333D625F82BC00C88DBC372CC63B792410BD71EBC43C635102BC9E9217BD91AA08BD2978F9BCA403473C9AC30A3DBE690F3DD86047BCD54AD2BC76AFA0BCCE50F7BCCEAE3ABC787C23BD3E82C13CE25F2ABD3335E1BCD9F6F23C756707BDF0192D3C7896073DE96E323D1530B73C565142BCB9E1CE3C192CBFBA1C435FBC50EC1639C96A223C0DC1F23C8AF8973CB8DEAC3CEEA3D83B9FC611BBD604983C24282E3C34372DBD7721EA3B48C7A0BC04FDBFBCE6028C3CCA10143C413CF53BC3BEABBCE649A73CD1DF293DBD29B13BB4CE943C37D01EBDF13AD73C2A897B3CCB1BA33C7FF9963C3C733EBCEBD92DBB1A182F3D5775043DA8C001BD01A00F3DF927343DE172BE3B613A0DBD095B0C3C393C12BC8926023DA5EB2DBD3E4B393CC4E107BA7401643B220BF93CC648513A35BC11BDD230D3BC31F690BC3B729A3BEFB58B3C6B2707BC84E38EBC67DD9E3CAC0130BD5FFCFC3C0958A8BBC7EAFB3CDEC7083DAEB39A3BA30B653C7BC5CCBC8DB2013D42E6D33C0B72E3BB4A1D8D3C4C3B22BBB96D0D3D0908953CBAF8033DF28A24BD3A5F303D8CE3863C4504B03C7958213C45C8ED3C5E6A2A3DE0BC76BBB08714BD3239263DA5B318BC469AAEBCA6DDDE3CC70BCA3CD0E1C13BD4CE35BB41840ABC76FA253DAB95DC3C659BD73C39DDE63CEF79BDBC122F173C13991CBD4556D23C826D33BD57E934BD32EF32BDEA41DF3C9AB5963B13C3D238FD55E63B940389BC32E05BBCCBDDF3BCFAD430BC8FC6DEBC3568983A603A0E3DB4A515BD4D0AB23C4EA406BD540096BCD8960D3C0C2EF93B1A73143D6BAE8AB79CE389BC4BBA95BCEED3A93AC7BB07BD02EE0DBD2DE79ABC6FCD943AE67FF4BCE8A9CEBC373F013D8C48273D7BCE62BCA44D1BBD979B8ABC9F1E923CE0FE6A3CB97660BC606D1FBDADB859BC61E621BC0E7CD03C2C86B3BC6C48D93CC5E2C83B4CB5F2BB215221BDE7B6323D7C1D01BC51CBE33C6B45BBBC3D4830BD764A10BD1B8AB9BC7A9866BCB67FCCBB04F9163D56F226BD14B3B43C9A50183D6721953955C8E1BCB845B93A80C72B3C1B30A03CE0185CBC8C7B78BC9CCCAABC9F152FBD664D7E3C72DA08BD86ECADBCFE70EEB96D8C0B3D67F3203D8FAA03BDE8FE1C3D5827223DE43B123DA9287C3B8B62113DFBE6AF3C64E401BD84D2BEBC4AE1593AE24800BDF36C6EBC01F2113DCB8EA83C60A51D3D54A1B139939AB8BC539DEF3CBD85553BEADFF33B216599BC07B7943CEFB005BDFD72103D0B5D1E3DADA1823CE8F60C3DF6BEDB3CD3448ABC0E011DBD1790BE3BC150E33CFB2594BBF8B2733B982B063DA87B953C0654073DA9A4D43B9F54A23B8E322DBCC55FF4BB3F69C0BCF60CF23C3819253DA45B863C1497A43A87056FBCE5B932BDFC1206BCBA8100BDC5A305BD13610FBCF2700EBCA510123CD33403BD5317023D30CF24BD8575ABBCD97289BC0A91323BE9A8953C47D13EBC0E03E23B1E6A2BBCB9648EBC3590CABB7EC9113C54D52FBD9CFEFBBCEC6B0D3D5BB5A33C6CE19ABACCEEB63A68E5C73BAB4A283C7B2DF7BCDC5F45BC9B2226BD98500EBD2E3D08BCBB35BFBB64950D3D1E70F93BE6CFEABB427BA0BA2032CA3C48575BBC9B5C07BC444111BC16F811BDDE65CABB815727BD3C9AC2BC4F71E6BC92D8063D8DC026BDFB6A2E3DD7BE873CCEA9F4BCFEF8153DAF8E1FBC185219BDBD1BC9BB55ECB23CCA0030BD4D0B59BBB34E933C7C188DBC0EE5833B27E48DBC16E4F2BC7BC30D3D498800BD90D207BA3A29713C1953CABCADCEAE3C415416BDF8E12C3DB53CA13C5A05CDBB399416BD3FA3B23A216B803C69A0C4BC0D60B6BB4C6634BD2FF734BDB4469DBB9677173DF55008BBC501633C6BB690BC386E6CBCD02D9FBBA505B7BC5E89DD3C5BC4E13C7AB90CBDA2165E3C5B8F95BC2C30D0BC2FACB0BBDD9460BC2C24CEBC5F6CD53B62A4CE3CC775DFBBAA994ABB25F3593BAF989BBCDBAABF3CCD05273D0E5B84BBA9E2443B94DA113DF943143D09A906BD3AA9A7BC309131BDDDBEDD3C45490D3DA4C483BCCA43683C6F652F3CCCBD1BBDFF92903C43A5B13CA6C97E3A2082943BC941283C6568023D80F11F3D8B23D03B47529A3CEC6F3DBC5BD9D73C92688EBC573615BDFCDBA93C7946863C04601F3C3C099A3C5553AC3B856E763C4C86933CEA4CC3BC4B2F1BBB423DDA3BF3DCDBBBBA3218BDF05E893BA141DD3C249EC1BCF2B9313D8421253C3BFA993CAFCC8BBC7F1314BD86BC86BC91F9B03AB4F8A4BCB235213D88B7E7BC98D7F3BCCC6A80BCDF66223D438BA5BC7B77273D04FCAD3C7309DCBBCE3FBB3CBF1DAC3C5746B8BCB61115BCFC562F3D6F90CF3CBDD3B0BC47B242BC77EBCA3C67CBB73CA795653B8AF3E8BC828305BD92D418BC151C853C56639ABBDB5817BDDF7431BCF4AF343DB09D15BDFE7C0CBD9596E33C921D343D47222EBD8AB823BD9D6862BC8B7B343D377ACDBC11A2773B5DC5133D382A80BCAB0C5EBC2D03F3BC1F69DE3AA5F5283DD30A943C2F79FE3C5BE23FBBD205E6BBFF5B01BCD47CCE3CB5E4BDBB3DA01ABD2C427EBC87AF8D3C2F7D303D21A903BC649B1DBDAB4905BD5D6D0EBD65F0913C3F6F053D7F22563C7CA8793C72DCEB3C8088F73C5C2FD83CB373CA3C8FED433CFADEBA3C186BF8BCCE54EABC38BC423C6A5DE13B59231FBD4EDF03BDE31A10BD18C50F3D48B3EC3C278FBEBCBA7FDA3B068B26BC675D1D3D9CF423BD960F04BDDCB516BDDEB2D23C88FAB4BC42A2D73CFCC2743C38F6B0BC320F43BCC18292BCDEB89F3C6D3091BCBDBA753C5EE94E3B2E9010BDF294E3BC3307FBBCD5B4BD3CDCE41C3C45A691BA9F92D7BCF55A33BDDC1E80BCB28A0ABDA90D34BD28A62CBD4D7BECBCECF92FBDAAB6613C0677873C17ED913C2D3434BDBADEDF3C302B0D3CCF1FB93C1EF631BC33DBAD3C74AE2BBD42A0763CB18A0F3D4530983C93A12ABDF7434BBC71D6B3BB08B1BD3C07FF88BC8948D03B1F307EBC330DE6BB779E66BA79E3CFBCE649FBBC2C70153DA117183DBD5EAFBA4AAF1C3DAC7D0B3D9D0AE4BCFDDB8FBC48AAF8BCE8196A3C007F923A7E98C6BB9F66063D9E828DBCF623C6BCACAE00BDFB2DB8BCBC782E3D1005B0BC753B47BC102DA33C60070BBD14BEDBBC533B053D7FDB8ABC51DDBBBC1D5CBBBBC859CEBBE553043C27BB843C03930BBDE280243DCE1A2CBDE63B753C924D4CBC28E398BC4654293D9B702EBD64CE453B23FDE73C89D4213D580919BDB27AAE3BCE18333D4E5031BD79DB303CC9D7E2BCB216EB3B4DBF23BDD01FB23CF4A020BCAE5ED83CA3362EBA5F6BCEBB37CB2FBCAFBF25BDA6C799BC0B60C03A830B0CBDDDDC1E3D2475EBBC220C8DBCFBA8C1BB12A312BDEA10B7B95656AEBC2E8517BD92158E3A1A41203DB54D323C884D153DCC96E2B935BB7CBCDCE4113DC5CAC0BC407627BD3C791E3C506EB43CF869D8BC73D97E3CFA7180BCA0B5AFBBE35220BCF6DF1ABCED4913BD9F75313CCA763EBCF0690A3DA6B6F13B9C0A14BD13B609BD6EAEBCBC3F5FAD3CA9BFE9BC759FA5BCB774033C2A00FBBCEA46B2BC4925243D5568BFBCFA3D71BC1277013D1641223CFE140E3DE9791FBDA1F6B43CB881DDBB52F0E7BC540F9BBC67182FBD0A73FA3CD3EF0ABC5C7F31BD8DCF1A3D8F7EEA3C5CB2953C4B2B313D6378233D542C293D811B223D3E1C133D388E3D3C9C8D72BB104ADC3A877496BC4E1BAA3CCDD0A73A25D42A3CD334E9BC605188BCEFB5073D7FD98C3B88DF793CFE071EBDCF089BBCF16C93BA7FF697BB041BE73CF8835ABC0914173DCD0A0CBC86D08C3CA7E2FEBCDBCCF53B817B30BD02501BBDE6B4E7BCE1B54A3CFB7B603BAD288C3B53699EBBF719183D9953313DEFC0993CDEF40F3D38240FBBD01885BC70C40C3CAA0DEE3C8DD0DFBB0EFE0ABDCB1D6F3C259438BC7046AEBCF7ABE43C469DC4BA44F3CEBC43A2D8BC117A2A3DB87CEB3C2FCD01BDF837B137A3A47ABA2492AC3C4A091BBD902E2C3A6741713C193EB83C636C973BB673B3BCFDC72DBDCFAFC33C9643253D019D5ABCC6C421BDD3DA533C25D3FDBC1C8BECBC8D5F453C418589BB370245BB705D223D7702FEBB6760DC3C8C5961BC7EB2063D62E55C3C554E213D158B7C3C8E3D80BCC3CB9D3C7D391A3D9A3C093C04E9A63CDFB3FEBC6D2AC43C971D2BBD6506203DD287953CFE993E3BF66C29BDA89C243DCCD9E63C42E0263D43528E3C5EDA733C6C8F3BBC345D94BC61838F3C271D7B3C03CCBBBA6757E63BFDBA783CE2ED2EBD511520BD90C040BCEE91F63CDBA1B03CACC62CBD3A6759BCDB1399BB13D16D3C8318143D26637D3A25E70CBDFCB6313B22CE8BBCCB41DDBC9687C83CFB8FC2BBE011AB3CC3F30C3DB6538E3BF4EACB3C4EFCAABC7F18CA3CA46AE73ADA95F03CB4102D3DD0EE08BD6FD82B3DEB2E0A3DD4D211BDD241543C885E13BD71E16A3C4DF1DF3B99CD2CBD476D833CC6E346BC9B6F343D24AD303D73F5793CEDAF0E3DE9C2823C11432B3D09B485BBBEF4323CE035EFBB589B4ABA076E5ABC4F478FBC6D6ED13C505C9B3C4CD19FBC59881FBD7D05B13CBA8326BD492A00BBBCC11BBDB492173D5E66133DEEC414BDB84C28BDEA0DD6BC85CD473CFD0BB5BCA96F2CBCE08937BCD3D1043C133FABBC1CA9A43CF98801BDE1E780BB34BC173DF7E8C7BCA0E10A3D396DBC3CE1E369BC93157B3CA795F4BC3E1A693B421A4D3C20931C3DD696CABC3CE6CDBCFCB1B4BC145830BDA76D123CA4D715BDCA5F42BCF488A1BC8CEF213BE2A55B3C4D8B03BD1CC255BC52398BBBC449D1BC2C45273C8006863C520201BDA7560E3DE0A1003DD78759BC1779D73B0B53B03B12CEC7BB59FAF2BCE329153D0A29B23CAF4517BDF74A0CBD27242C3DF121E73B865A26BC055EF53C2103503C1AF6813C189C0F3D000D62BB257D2C3DFA4EFEBCF24CDCBC855FF53B19D0AFBB1199CE3C71E544BC45B8E33B5F7416BC4EE6073DEBF93DBB89D3313A139D043DA9FB2F3D91352D3DA7FC30BDE792CCBC6F3B1DBC1E7B15BCB76AD13C7F83A33C043A6EBBC539893A9A231B3C870C1C3DFD9CBB3CA39DB6BC0B76B9BCC9FC643C907992BB3743E8BC48342FBD476FCF3B877253BCA7A5D2BCC834083C1746303DF159163D9A6BCE3C768608BD51A0CE3CC240BB3C5995713CB15E34BCE5BB49BA885EC4BC8B1A23BC2963EEBB1D24CDBB002634BD08727F3CC01B14BD555F07BD2B1F933CBE2D14BD88B02C3D96552D3D491966BC6D93F9BB617D0ABD760E333B2463043C0A9AC6BC",
      torch_tensor_8_torch.float32_4: "0x040000000000000000000000000000000000000000000000000000000000000000000000",
      torch_tensor_8_torch.float32_3: "0x040000000000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F",
      torch_tensor_8_torch.float32_2: "0x040000000000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F",
      torch_tensor_8_torch.float32_1: "0x040000000000000000000000000000000000000000000000000000000000000000000000",
      torch_tensor_8_3_3_3_torch.float32: "0x040000008BDABCBAC56ED33D543222BEDB0711BECCCD97BDC461533D56E479BBFC401C3ED7E88BBC6E96503D293A6EBD9CF21ABDFC443CBEE48302BE0379A2BDB69AE93B09D19B3DDD7DEC3DE29905BEE2A1ABBD58288F3DC5A4233E2D3A22BD0E78133E221DFEBC43D2A63CF270323EA2D036BEEC1FF8BD619047BD88A299BD87442A3EDB78FFBD416FB5BD28AE09BE299138BEFD12E6BD6966293E1CDFAF3D1C07BF3D9AD3253C6511CABD395D053D8F0038BE34650EBE9A30CBBD2EADF83D6317E73D54CCAEBDFC8AE3BB3613FC3DA8E9433E206D9C3D15FBD43CCB21043EBA11E8BDF4E3123DE2C918BEF29508BEE89ACBBD3456B23DB1819E3DF077E9BDC6246E3DE15ED83DF6FCC6BCD7C7F03BADA5363D8C83F43D72393D3EAEDD17BE887090BD6AE69A3D0448233EA57D2B3E94E22D3ED9E01C3D215E2BBEE807913C2093F6BDC0A837BE1F182F3EE0D7153EEC9444BE0C8B133DFCCA04BD34B801BD566BB4BD7091973DFF72E9BDCD7C903D9451C73D76130D3E5D5F933DC90B43BE0CADFFBD86CCC43DB5FC243DF5BA19BEC5F3E2BD7664393EDEC9043E9FDAABBDA06546BD3ABA3BBE7BB262BB8C6714BEAA0218BE15BC2DBC1BB6EC3C4F69A1BD5EDFE93D27D9EFBD7ED0323E210D073E512F26BE7F3044BDB8460E3C4105E63C6CF53A3DBAAB9A3D11DF3C3CA84FC0BD6D80BA3DC2093DBEAC9BE9BD335445BD62FDBFBDEFE189BD9E8521BE9CAD27BDBD7F283D366200BEB1D021BC6A120D3EE211A2BC6E43AF3BE10188BC44881F3DBD9BFA3D3AAC3A3EAE4CFA3D91193B3E9E0964BCFE0731BE0CDABABD6C2F063EF984A3BA9EE7C3BD260417BE656D38BEE85326BE29E41FBDC425D83D4B16D53D3D0F3EBE28DBF53D51351ABE4AA626BDE5CF9FBD7BD517BDACC51ABDFBD630BE21282ABEAAB2F6BC201B233B020CB3BDAD78943D9E5F31BE4FCB54BC644E2D3E01C4A0BD2EF4313E0DBD8E3DD4D831BEB45EF93DE0ECB5BC20F2AFBD38961D3E1C401FBEF52BA93C4D0A25BDB9BA0C3EF60A5C3DA462BD3D7B318B3D728F3DBD56C725BD9C6622BEAE8FD53DE8771C3EE5D6063E14020BBEC6A00C3CACEB0ABE74F7D8BD90AAE5BDD3B1863D35DFEABD729589BB25A5043CFF11FE3DE4F714BE4B4A07BE54DCE4BD63EF093EC2AD8DBDB339263EF0858E3DE4A1C73C2FC6BBBAD9D31BBDDACDC53CA0FF33BD933DB1BA2E28C93C",
      torch_tensor_8_torch.float32: "0x04000000F7251ABE7B94CEBDB7211F3E3CEE1FBE8B6962BCBCF2423E8E608E3D3E8CB23B"
    }
  }
#-}
