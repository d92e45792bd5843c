#map = affine_map<(d0) -> (d0)>
#map1 = affine_map<(d0, d1) -> (d0, d1)>
#map2 = affine_map<(d0, d1) -> ()>
#map3 = affine_map<(d0, d1) -> (d0)>
#map4 = affine_map<(d0, d1) -> (d0, 0)>
#map5 = affine_map<(d0, d1) -> (d1)>
module {
  func.func @main(%arg0: tensor<1024x1024xf32>) -> (tensor<1024x3xf32>, tensor<1024x3xi64>) {
    %c0_i64 = arith.constant 0 : i64
    %c1024_i64 = arith.constant 1024 : i64
    %cst = arith.constant 0xFF800000 : f32
    %true = arith.constant true
    %c9223372036854775807_i64 = arith.constant 9223372036854775807 : i64
    %cst_0 = arith.constant dense<0x7FC00000> : tensor<f32>
    %cst_1 = arith.constant dense<0xFF800000> : tensor<f32>
    %cst_2 = arith.constant dense<2048> : tensor<i64>
    %0 = tensor.empty() : tensor<1024xi64>
    %1 = linalg.generic {indexing_maps = [#map], iterator_types = ["parallel"]} outs(%0 : tensor<1024xi64>) {
    ^bb0(%out: i64):
      %62 = linalg.index 0 : index
      %63 = arith.index_cast %62 : index to i64
      linalg.yield %63 : i64
    } -> tensor<1024xi64>
    %2 = tensor.empty() : tensor<1024x1024xi1>
    %3 = linalg.generic {indexing_maps = [#map1, #map1, #map1], iterator_types = ["parallel", "parallel"]} ins(%arg0, %arg0 : tensor<1024x1024xf32>, tensor<1024x1024xf32>) outs(%2 : tensor<1024x1024xi1>) {
    ^bb0(%in: f32, %in_9: f32, %out: i1):
      %62 = arith.cmpf une, %in, %in_9 : f32
      linalg.yield %62 : i1
    } -> tensor<1024x1024xi1>
    %4 = tensor.empty() : tensor<1024x1024xf32>
    %5 = linalg.generic {indexing_maps = [#map1, #map2, #map1, #map1], iterator_types = ["parallel", "parallel"]} ins(%3, %cst_1, %arg0 : tensor<1024x1024xi1>, tensor<f32>, tensor<1024x1024xf32>) outs(%4 : tensor<1024x1024xf32>) {
    ^bb0(%in: i1, %in_9: f32, %in_10: f32, %out: f32):
      %62 = arith.select %in, %in_9, %in_10 : f32
      linalg.yield %62 : f32
    } -> tensor<1024x1024xf32>
    %6 = linalg.fill ins(%c0_i64 : i64) outs(%0 : tensor<1024xi64>) -> tensor<1024xi64>
    %7 = tensor.empty() : tensor<1024xf32>
    %8 = linalg.fill ins(%cst : f32) outs(%7 : tensor<1024xf32>) -> tensor<1024xf32>
    %9:2 = linalg.generic {indexing_maps = [#map1, #map3, #map3], iterator_types = ["parallel", "reduction"]} ins(%5 : tensor<1024x1024xf32>) outs(%8, %6 : tensor<1024xf32>, tensor<1024xi64>) {
    ^bb0(%in: f32, %out: f32, %out_9: i64):
      %62 = linalg.index 1 : index
      %63 = arith.index_cast %62 : index to i64
      %64 = arith.maximumf %in, %out : f32
      %65 = arith.cmpf ogt, %in, %out : f32
      %66 = arith.select %65, %63, %out_9 : i64
      linalg.yield %64, %66 : f32, i64
    } -> (tensor<1024xf32>, tensor<1024xi64>)
    %expanded = tensor.expand_shape %9#0 [[0, 1]] output_shape [1024, 1] : tensor<1024xf32> into tensor<1024x1xf32>
    %10 = linalg.generic {indexing_maps = [#map1, #map4, #map1], iterator_types = ["parallel", "parallel"]} ins(%arg0, %expanded : tensor<1024x1024xf32>, tensor<1024x1xf32>) outs(%2 : tensor<1024x1024xi1>) {
    ^bb0(%in: f32, %in_9: f32, %out: i1):
      %62 = arith.cmpf oeq, %in, %in_9 : f32
      linalg.yield %62 : i1
    } -> tensor<1024x1024xi1>
    %11 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel"]} ins(%3 : tensor<1024x1024xi1>) outs(%2 : tensor<1024x1024xi1>) {
    ^bb0(%in: i1, %out: i1):
      %62 = arith.xori %in, %true : i1
      linalg.yield %62 : i1
    } -> tensor<1024x1024xi1>
    %12 = linalg.generic {indexing_maps = [#map1, #map1, #map1], iterator_types = ["parallel", "parallel"]} ins(%10, %11 : tensor<1024x1024xi1>, tensor<1024x1024xi1>) outs(%2 : tensor<1024x1024xi1>) {
    ^bb0(%in: i1, %in_9: i1, %out: i1):
      %62 = arith.andi %in, %in_9 : i1
      linalg.yield %62 : i1
    } -> tensor<1024x1024xi1>
    %13 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]} ins(%1 : tensor<1024xi64>) outs(%0 : tensor<1024xi64>) {
    ^bb0(%in: i64, %out: i64):
      %62 = arith.addi %in, %c1024_i64 : i64
      linalg.yield %62 : i64
    } -> tensor<1024xi64>
    %14 = tensor.empty() : tensor<1024x1024xi64>
    %15 = linalg.generic {indexing_maps = [#map1, #map5, #map2, #map1], iterator_types = ["parallel", "parallel"]} ins(%12, %13, %cst_2 : tensor<1024x1024xi1>, tensor<1024xi64>, tensor<i64>) outs(%14 : tensor<1024x1024xi64>) {
    ^bb0(%in: i1, %in_9: i64, %in_10: i64, %out: i64):
      %62 = arith.select %in, %in_9, %in_10 : i64
      linalg.yield %62 : i64
    } -> tensor<1024x1024xi64>
    %16 = linalg.generic {indexing_maps = [#map1, #map5, #map1, #map1], iterator_types = ["parallel", "parallel"]} ins(%3, %1, %15 : tensor<1024x1024xi1>, tensor<1024xi64>, tensor<1024x1024xi64>) outs(%14 : tensor<1024x1024xi64>) {
    ^bb0(%in: i1, %in_9: i64, %in_10: i64, %out: i64):
      %62 = arith.select %in, %in_9, %in_10 : i64
      linalg.yield %62 : i64
    } -> tensor<1024x1024xi64>
    %17 = linalg.fill ins(%c9223372036854775807_i64 : i64) outs(%0 : tensor<1024xi64>) -> tensor<1024xi64>
    %18:2 = linalg.generic {indexing_maps = [#map1, #map3, #map3], iterator_types = ["parallel", "reduction"]} ins(%16 : tensor<1024x1024xi64>) outs(%17, %6 : tensor<1024xi64>, tensor<1024xi64>) {
    ^bb0(%in: i64, %out: i64, %out_9: i64):
      %62 = linalg.index 1 : index
      %63 = arith.index_cast %62 : index to i64
      %64 = arith.minsi %in, %out : i64
      %65 = arith.cmpi slt, %in, %out : i64
      %66 = arith.select %65, %63, %out_9 : i64
      linalg.yield %64, %66 : i64, i64
    } -> (tensor<1024xi64>, tensor<1024xi64>)
    %expanded_3 = tensor.expand_shape %18#0 [[0, 1]] output_shape [1024, 1] : tensor<1024xi64> into tensor<1024x1xi64>
    %19 = tensor.empty() : tensor<1024x1xi1>
    %20 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel"]} ins(%expanded_3 : tensor<1024x1xi64>) outs(%19 : tensor<1024x1xi1>) {
    ^bb0(%in: i64, %out: i1):
      %62 = arith.cmpi sge, %in, %c1024_i64 : i64
      linalg.yield %62 : i1
    } -> tensor<1024x1xi1>
    %21 = tensor.empty() : tensor<1024x1xi64>
    %22 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel"]} ins(%expanded_3 : tensor<1024x1xi64>) outs(%21 : tensor<1024x1xi64>) {
    ^bb0(%in: i64, %out: i64):
      %62 = arith.subi %in, %c1024_i64 : i64
      linalg.yield %62 : i64
    } -> tensor<1024x1xi64>
    %23 = linalg.generic {indexing_maps = [#map1, #map1, #map1, #map1], iterator_types = ["parallel", "parallel"]} ins(%20, %22, %expanded_3 : tensor<1024x1xi1>, tensor<1024x1xi64>, tensor<1024x1xi64>) outs(%21 : tensor<1024x1xi64>) {
    ^bb0(%in: i1, %in_9: i64, %in_10: i64, %out: i64):
      %62 = arith.select %in, %in_9, %in_10 : i64
      linalg.yield %62 : i64
    } -> tensor<1024x1xi64>
    %24 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel"]} ins(%expanded_3 : tensor<1024x1xi64>) outs(%19 : tensor<1024x1xi1>) {
    ^bb0(%in: i64, %out: i1):
      %62 = arith.cmpi slt, %in, %c1024_i64 : i64
      linalg.yield %62 : i1
    } -> tensor<1024x1xi1>
    %25 = tensor.empty() : tensor<1024x1xf32>
    %26 = linalg.generic {indexing_maps = [#map1, #map2, #map1, #map1], iterator_types = ["parallel", "parallel"]} ins(%24, %cst_0, %expanded : tensor<1024x1xi1>, tensor<f32>, tensor<1024x1xf32>) outs(%25 : tensor<1024x1xf32>) {
    ^bb0(%in: i1, %in_9: f32, %in_10: f32, %out: f32):
      %62 = arith.select %in, %in_9, %in_10 : f32
      linalg.yield %62 : f32
    } -> tensor<1024x1xf32>
    %27 = linalg.generic {indexing_maps = [#map5, #map4, #map1], iterator_types = ["parallel", "parallel"]} ins(%1, %23 : tensor<1024xi64>, tensor<1024x1xi64>) outs(%2 : tensor<1024x1024xi1>) {
    ^bb0(%in: i64, %in_9: i64, %out: i1):
      %62 = arith.cmpi eq, %in, %in_9 : i64
      linalg.yield %62 : i1
    } -> tensor<1024x1024xi1>
    %28 = linalg.generic {indexing_maps = [#map1, #map1, #map1], iterator_types = ["parallel", "parallel"]} ins(%3, %27 : tensor<1024x1024xi1>, tensor<1024x1024xi1>) outs(%2 : tensor<1024x1024xi1>) {
    ^bb0(%in: i1, %in_9: i1, %out: i1):
      %62 = arith.ori %in, %in_9 : i1
      linalg.yield %62 : i1
    } -> tensor<1024x1024xi1>
    %29 = linalg.generic {indexing_maps = [#map1, #map2, #map1, #map1], iterator_types = ["parallel", "parallel"]} ins(%28, %cst_1, %arg0 : tensor<1024x1024xi1>, tensor<f32>, tensor<1024x1024xf32>) outs(%4 : tensor<1024x1024xf32>) {
    ^bb0(%in: i1, %in_9: f32, %in_10: f32, %out: f32):
      %62 = arith.select %in, %in_9, %in_10 : f32
      linalg.yield %62 : f32
    } -> tensor<1024x1024xf32>
    %30:2 = linalg.generic {indexing_maps = [#map1, #map3, #map3], iterator_types = ["parallel", "reduction"]} ins(%29 : tensor<1024x1024xf32>) outs(%8, %6 : tensor<1024xf32>, tensor<1024xi64>) {
    ^bb0(%in: f32, %out: f32, %out_9: i64):
      %62 = linalg.index 1 : index
      %63 = arith.index_cast %62 : index to i64
      %64 = arith.maximumf %in, %out : f32
      %65 = arith.cmpf ogt, %in, %out : f32
      %66 = arith.select %65, %63, %out_9 : i64
      linalg.yield %64, %66 : f32, i64
    } -> (tensor<1024xf32>, tensor<1024xi64>)
    %expanded_4 = tensor.expand_shape %30#0 [[0, 1]] output_shape [1024, 1] : tensor<1024xf32> into tensor<1024x1xf32>
    %31 = linalg.generic {indexing_maps = [#map1, #map4, #map1], iterator_types = ["parallel", "parallel"]} ins(%arg0, %expanded_4 : tensor<1024x1024xf32>, tensor<1024x1xf32>) outs(%2 : tensor<1024x1024xi1>) {
    ^bb0(%in: f32, %in_9: f32, %out: i1):
      %62 = arith.cmpf oeq, %in, %in_9 : f32
      linalg.yield %62 : i1
    } -> tensor<1024x1024xi1>
    %32 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel"]} ins(%28 : tensor<1024x1024xi1>) outs(%2 : tensor<1024x1024xi1>) {
    ^bb0(%in: i1, %out: i1):
      %62 = arith.xori %in, %true : i1
      linalg.yield %62 : i1
    } -> tensor<1024x1024xi1>
    %33 = linalg.generic {indexing_maps = [#map1, #map1, #map1], iterator_types = ["parallel", "parallel"]} ins(%31, %32 : tensor<1024x1024xi1>, tensor<1024x1024xi1>) outs(%2 : tensor<1024x1024xi1>) {
    ^bb0(%in: i1, %in_9: i1, %out: i1):
      %62 = arith.andi %in, %in_9 : i1
      linalg.yield %62 : i1
    } -> tensor<1024x1024xi1>
    %34 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel"]} ins(%27 : tensor<1024x1024xi1>) outs(%2 : tensor<1024x1024xi1>) {
    ^bb0(%in: i1, %out: i1):
      %62 = arith.xori %in, %true : i1
      linalg.yield %62 : i1
    } -> tensor<1024x1024xi1>
    %35 = linalg.generic {indexing_maps = [#map1, #map1, #map1], iterator_types = ["parallel", "parallel"]} ins(%3, %34 : tensor<1024x1024xi1>, tensor<1024x1024xi1>) outs(%2 : tensor<1024x1024xi1>) {
    ^bb0(%in: i1, %in_9: i1, %out: i1):
      %62 = arith.andi %in, %in_9 : i1
      linalg.yield %62 : i1
    } -> tensor<1024x1024xi1>
    %36 = linalg.generic {indexing_maps = [#map1, #map5, #map2, #map1], iterator_types = ["parallel", "parallel"]} ins(%33, %13, %cst_2 : tensor<1024x1024xi1>, tensor<1024xi64>, tensor<i64>) outs(%14 : tensor<1024x1024xi64>) {
    ^bb0(%in: i1, %in_9: i64, %in_10: i64, %out: i64):
      %62 = arith.select %in, %in_9, %in_10 : i64
      linalg.yield %62 : i64
    } -> tensor<1024x1024xi64>
    %37 = linalg.generic {indexing_maps = [#map1, #map5, #map1, #map1], iterator_types = ["parallel", "parallel"]} ins(%35, %1, %36 : tensor<1024x1024xi1>, tensor<1024xi64>, tensor<1024x1024xi64>) outs(%14 : tensor<1024x1024xi64>) {
    ^bb0(%in: i1, %in_9: i64, %in_10: i64, %out: i64):
      %62 = arith.select %in, %in_9, %in_10 : i64
      linalg.yield %62 : i64
    } -> tensor<1024x1024xi64>
    %38:2 = linalg.generic {indexing_maps = [#map1, #map3, #map3], iterator_types = ["parallel", "reduction"]} ins(%37 : tensor<1024x1024xi64>) outs(%17, %6 : tensor<1024xi64>, tensor<1024xi64>) {
    ^bb0(%in: i64, %out: i64, %out_9: i64):
      %62 = linalg.index 1 : index
      %63 = arith.index_cast %62 : index to i64
      %64 = arith.minsi %in, %out : i64
      %65 = arith.cmpi slt, %in, %out : i64
      %66 = arith.select %65, %63, %out_9 : i64
      linalg.yield %64, %66 : i64, i64
    } -> (tensor<1024xi64>, tensor<1024xi64>)
    %expanded_5 = tensor.expand_shape %38#0 [[0, 1]] output_shape [1024, 1] : tensor<1024xi64> into tensor<1024x1xi64>
    %39 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel"]} ins(%expanded_5 : tensor<1024x1xi64>) outs(%19 : tensor<1024x1xi1>) {
    ^bb0(%in: i64, %out: i1):
      %62 = arith.cmpi sge, %in, %c1024_i64 : i64
      linalg.yield %62 : i1
    } -> tensor<1024x1xi1>
    %40 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel"]} ins(%expanded_5 : tensor<1024x1xi64>) outs(%21 : tensor<1024x1xi64>) {
    ^bb0(%in: i64, %out: i64):
      %62 = arith.subi %in, %c1024_i64 : i64
      linalg.yield %62 : i64
    } -> tensor<1024x1xi64>
    %41 = linalg.generic {indexing_maps = [#map1, #map1, #map1, #map1], iterator_types = ["parallel", "parallel"]} ins(%39, %40, %expanded_5 : tensor<1024x1xi1>, tensor<1024x1xi64>, tensor<1024x1xi64>) outs(%21 : tensor<1024x1xi64>) {
    ^bb0(%in: i1, %in_9: i64, %in_10: i64, %out: i64):
      %62 = arith.select %in, %in_9, %in_10 : i64
      linalg.yield %62 : i64
    } -> tensor<1024x1xi64>
    %42 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel"]} ins(%expanded_5 : tensor<1024x1xi64>) outs(%19 : tensor<1024x1xi1>) {
    ^bb0(%in: i64, %out: i1):
      %62 = arith.cmpi slt, %in, %c1024_i64 : i64
      linalg.yield %62 : i1
    } -> tensor<1024x1xi1>
    %43 = linalg.generic {indexing_maps = [#map1, #map2, #map1, #map1], iterator_types = ["parallel", "parallel"]} ins(%42, %cst_0, %expanded_4 : tensor<1024x1xi1>, tensor<f32>, tensor<1024x1xf32>) outs(%25 : tensor<1024x1xf32>) {
    ^bb0(%in: i1, %in_9: f32, %in_10: f32, %out: f32):
      %62 = arith.select %in, %in_9, %in_10 : f32
      linalg.yield %62 : f32
    } -> tensor<1024x1xf32>
    %44 = linalg.generic {indexing_maps = [#map5, #map4, #map1], iterator_types = ["parallel", "parallel"]} ins(%1, %41 : tensor<1024xi64>, tensor<1024x1xi64>) outs(%2 : tensor<1024x1024xi1>) {
    ^bb0(%in: i64, %in_9: i64, %out: i1):
      %62 = arith.cmpi eq, %in, %in_9 : i64
      linalg.yield %62 : i1
    } -> tensor<1024x1024xi1>
    %45 = linalg.generic {indexing_maps = [#map1, #map1, #map1], iterator_types = ["parallel", "parallel"]} ins(%27, %44 : tensor<1024x1024xi1>, tensor<1024x1024xi1>) outs(%2 : tensor<1024x1024xi1>) {
    ^bb0(%in: i1, %in_9: i1, %out: i1):
      %62 = arith.ori %in, %in_9 : i1
      linalg.yield %62 : i1
    } -> tensor<1024x1024xi1>
    %46 = linalg.generic {indexing_maps = [#map1, #map1, #map1], iterator_types = ["parallel", "parallel"]} ins(%3, %45 : tensor<1024x1024xi1>, tensor<1024x1024xi1>) outs(%2 : tensor<1024x1024xi1>) {
    ^bb0(%in: i1, %in_9: i1, %out: i1):
      %62 = arith.ori %in, %in_9 : i1
      linalg.yield %62 : i1
    } -> tensor<1024x1024xi1>
    %47 = linalg.generic {indexing_maps = [#map1, #map2, #map1, #map1], iterator_types = ["parallel", "parallel"]} ins(%46, %cst_1, %arg0 : tensor<1024x1024xi1>, tensor<f32>, tensor<1024x1024xf32>) outs(%4 : tensor<1024x1024xf32>) {
    ^bb0(%in: i1, %in_9: f32, %in_10: f32, %out: f32):
      %62 = arith.select %in, %in_9, %in_10 : f32
      linalg.yield %62 : f32
    } -> tensor<1024x1024xf32>
    %48:2 = linalg.generic {indexing_maps = [#map1, #map3, #map3], iterator_types = ["parallel", "reduction"]} ins(%47 : tensor<1024x1024xf32>) outs(%8, %6 : tensor<1024xf32>, tensor<1024xi64>) {
    ^bb0(%in: f32, %out: f32, %out_9: i64):
      %62 = linalg.index 1 : index
      %63 = arith.index_cast %62 : index to i64
      %64 = arith.maximumf %in, %out : f32
      %65 = arith.cmpf ogt, %in, %out : f32
      %66 = arith.select %65, %63, %out_9 : i64
      linalg.yield %64, %66 : f32, i64
    } -> (tensor<1024xf32>, tensor<1024xi64>)
    %expanded_6 = tensor.expand_shape %48#0 [[0, 1]] output_shape [1024, 1] : tensor<1024xf32> into tensor<1024x1xf32>
    %49 = linalg.generic {indexing_maps = [#map1, #map4, #map1], iterator_types = ["parallel", "parallel"]} ins(%arg0, %expanded_6 : tensor<1024x1024xf32>, tensor<1024x1xf32>) outs(%2 : tensor<1024x1024xi1>) {
    ^bb0(%in: f32, %in_9: f32, %out: i1):
      %62 = arith.cmpf oeq, %in, %in_9 : f32
      linalg.yield %62 : i1
    } -> tensor<1024x1024xi1>
    %50 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel"]} ins(%46 : tensor<1024x1024xi1>) outs(%2 : tensor<1024x1024xi1>) {
    ^bb0(%in: i1, %out: i1):
      %62 = arith.xori %in, %true : i1
      linalg.yield %62 : i1
    } -> tensor<1024x1024xi1>
    %51 = linalg.generic {indexing_maps = [#map1, #map1, #map1], iterator_types = ["parallel", "parallel"]} ins(%49, %50 : tensor<1024x1024xi1>, tensor<1024x1024xi1>) outs(%2 : tensor<1024x1024xi1>) {
    ^bb0(%in: i1, %in_9: i1, %out: i1):
      %62 = arith.andi %in, %in_9 : i1
      linalg.yield %62 : i1
    } -> tensor<1024x1024xi1>
    %52 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel"]} ins(%45 : tensor<1024x1024xi1>) outs(%2 : tensor<1024x1024xi1>) {
    ^bb0(%in: i1, %out: i1):
      %62 = arith.xori %in, %true : i1
      linalg.yield %62 : i1
    } -> tensor<1024x1024xi1>
    %53 = linalg.generic {indexing_maps = [#map1, #map1, #map1], iterator_types = ["parallel", "parallel"]} ins(%3, %52 : tensor<1024x1024xi1>, tensor<1024x1024xi1>) outs(%2 : tensor<1024x1024xi1>) {
    ^bb0(%in: i1, %in_9: i1, %out: i1):
      %62 = arith.andi %in, %in_9 : i1
      linalg.yield %62 : i1
    } -> tensor<1024x1024xi1>
    %54 = linalg.generic {indexing_maps = [#map1, #map5, #map2, #map1], iterator_types = ["parallel", "parallel"]} ins(%51, %13, %cst_2 : tensor<1024x1024xi1>, tensor<1024xi64>, tensor<i64>) outs(%14 : tensor<1024x1024xi64>) {
    ^bb0(%in: i1, %in_9: i64, %in_10: i64, %out: i64):
      %62 = arith.select %in, %in_9, %in_10 : i64
      linalg.yield %62 : i64
    } -> tensor<1024x1024xi64>
    %55 = linalg.generic {indexing_maps = [#map1, #map5, #map1, #map1], iterator_types = ["parallel", "parallel"]} ins(%53, %1, %54 : tensor<1024x1024xi1>, tensor<1024xi64>, tensor<1024x1024xi64>) outs(%14 : tensor<1024x1024xi64>) {
    ^bb0(%in: i1, %in_9: i64, %in_10: i64, %out: i64):
      %62 = arith.select %in, %in_9, %in_10 : i64
      linalg.yield %62 : i64
    } -> tensor<1024x1024xi64>
    %56:2 = linalg.generic {indexing_maps = [#map1, #map3, #map3], iterator_types = ["parallel", "reduction"]} ins(%55 : tensor<1024x1024xi64>) outs(%17, %6 : tensor<1024xi64>, tensor<1024xi64>) {
    ^bb0(%in: i64, %out: i64, %out_9: i64):
      %62 = linalg.index 1 : index
      %63 = arith.index_cast %62 : index to i64
      %64 = arith.minsi %in, %out : i64
      %65 = arith.cmpi slt, %in, %out : i64
      %66 = arith.select %65, %63, %out_9 : i64
      linalg.yield %64, %66 : i64, i64
    } -> (tensor<1024xi64>, tensor<1024xi64>)
    %expanded_7 = tensor.expand_shape %56#0 [[0, 1]] output_shape [1024, 1] : tensor<1024xi64> into tensor<1024x1xi64>
    %57 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel"]} ins(%expanded_7 : tensor<1024x1xi64>) outs(%19 : tensor<1024x1xi1>) {
    ^bb0(%in: i64, %out: i1):
      %62 = arith.cmpi sge, %in, %c1024_i64 : i64
      linalg.yield %62 : i1
    } -> tensor<1024x1xi1>
    %58 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel"]} ins(%expanded_7 : tensor<1024x1xi64>) outs(%21 : tensor<1024x1xi64>) {
    ^bb0(%in: i64, %out: i64):
      %62 = arith.subi %in, %c1024_i64 : i64
      linalg.yield %62 : i64
    } -> tensor<1024x1xi64>
    %59 = linalg.generic {indexing_maps = [#map1, #map1, #map1, #map1], iterator_types = ["parallel", "parallel"]} ins(%57, %58, %expanded_7 : tensor<1024x1xi1>, tensor<1024x1xi64>, tensor<1024x1xi64>) outs(%21 : tensor<1024x1xi64>) {
    ^bb0(%in: i1, %in_9: i64, %in_10: i64, %out: i64):
      %62 = arith.select %in, %in_9, %in_10 : i64
      linalg.yield %62 : i64
    } -> tensor<1024x1xi64>
    %60 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel"]} ins(%expanded_7 : tensor<1024x1xi64>) outs(%19 : tensor<1024x1xi1>) {
    ^bb0(%in: i64, %out: i1):
      %62 = arith.cmpi slt, %in, %c1024_i64 : i64
      linalg.yield %62 : i1
    } -> tensor<1024x1xi1>
    %61 = linalg.generic {indexing_maps = [#map1, #map2, #map1, #map1], iterator_types = ["parallel", "parallel"]} ins(%60, %cst_0, %expanded_6 : tensor<1024x1xi1>, tensor<f32>, tensor<1024x1xf32>) outs(%25 : tensor<1024x1xf32>) {
    ^bb0(%in: i1, %in_9: f32, %in_10: f32, %out: f32):
      %62 = arith.select %in, %in_9, %in_10 : f32
      linalg.yield %62 : f32
    } -> tensor<1024x1xf32>
    %concat = tensor.concat dim(1) %26, %43, %61 : (tensor<1024x1xf32>, tensor<1024x1xf32>, tensor<1024x1xf32>) -> tensor<1024x3xf32>
    %concat_8 = tensor.concat dim(1) %23, %41, %59 : (tensor<1024x1xi64>, tensor<1024x1xi64>, tensor<1024x1xi64>) -> tensor<1024x3xi64>
    return %concat, %concat_8 : tensor<1024x3xf32>, tensor<1024x3xi64>
  }
}
