// SPDX-License-Identifier: Apache-2.0
// How the CUDA engine hands a row-major IR matmul, C[M,N] = op(A)[M,K] · op(B)[K,N], to column-major
// cuBLASLt: as C^T[N,M] = op'(B)[N,K] · op'(A)[K,M], where a row-major matrix is read as its column-major
// transpose. Plain C++ so a host test can run the same mapping through a column-major BLAS.
#pragma once
#include <cstdint>

namespace gpuvs::engine::cuda {

struct ColMajorGemm {
  bool trans_left = false, trans_right = false;  // op flags for the left (B) and right (A) operands
  std::int64_t m = 0, n = 0, k = 0;              // of the column-major product: m = N, n = M, k = K
  std::int64_t left_rows = 0, left_cols = 0;     // B as stored, read column-major (leading dimension = rows)
  std::int64_t right_rows = 0, right_cols = 0;   // A as stored, read column-major
  std::int64_t out_rows = 0, out_cols = 0;       // C^T: N x M, leading dimension N
};

inline ColMajorGemm col_major_gemm(std::int64_t M, std::int64_t N, std::int64_t K, bool trans_a, bool trans_b) {
  ColMajorGemm g;
  g.trans_left = trans_b;
  g.trans_right = trans_a;
  g.m = N;
  g.n = M;
  g.k = K;
  g.left_rows = trans_b ? K : N;  // B row-major [K,N] is column-major [N,K]; transposed B [N,K] is [K,N]
  g.left_cols = trans_b ? N : K;
  g.right_rows = trans_a ? M : K;  // A row-major [M,K] is column-major [K,M]; transposed A [K,M] is [M,K]
  g.right_cols = trans_a ? K : M;
  g.out_rows = N;
  g.out_cols = M;
  return g;
}

}  // namespace gpuvs::engine::cuda
