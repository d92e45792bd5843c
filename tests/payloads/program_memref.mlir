// A self-checking program in the style of upstream's integration tests: @main allocates and fills its
// buffers, calls the kernel, prints the result with printMemrefF32 and frees what it allocated.
func.func private @printMemrefF32(memref<*xf32>)

func.func @filled(%rows : index, %cols : index, %v : f32) -> memref<?x?xf32> {
  %buf = memref.alloc(%rows, %cols) : memref<?x?xf32>
  linalg.fill ins(%v : f32) outs(%buf : memref<?x?xf32>)
  return %buf : memref<?x?xf32>
}

func.func @kernel(%a: memref<?x?xf32>, %b: memref<?x?xf32>, %c: memref<?x?xf32>) {
  linalg.matmul ins(%a, %b : memref<?x?xf32>, memref<?x?xf32>) outs(%c : memref<?x?xf32>)
  return
}

func.func @main() {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %one = arith.constant 1.5 : f32
  %two = arith.constant 2.0 : f32
  %seven = arith.constant 7.0 : f32
  %zero = arith.constant 0.0 : f32
  %a = call @filled(%c3, %c4, %one) : (index, index, f32) -> memref<?x?xf32>
  %b = call @filled(%c4, %c2, %two) : (index, index, f32) -> memref<?x?xf32>
  %c = call @filled(%c3, %c2, %zero) : (index, index, f32) -> memref<?x?xf32>
  memref.store %seven, %a[%c0, %c0] : memref<?x?xf32>
  call @kernel(%a, %b, %c) : (memref<?x?xf32>, memref<?x?xf32>, memref<?x?xf32>) -> ()
  %u = memref.cast %c : memref<?x?xf32> to memref<*xf32>
  call @printMemrefF32(%u) : (memref<*xf32>) -> ()
  memref.dealloc %a : memref<?x?xf32>
  memref.dealloc %b : memref<?x?xf32>
  memref.dealloc %c : memref<?x?xf32>
  return
}
