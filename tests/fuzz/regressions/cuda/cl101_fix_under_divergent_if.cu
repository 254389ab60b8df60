// issue 25, item 4: CL101's unsafe fix put `__syncwarp();` inside `if (threadIdx.x > i)`
// (a full-mask __syncwarp() that lanes 0..i never reach: undefined), the finding stayed,
// and every `--fix --unsafe-fixes` run inserted it again (12, 22, 32 insertions).
#define BLOCK_SIZE 16

__global__ void lu(float* m) {
    __shared__ float s[BLOCK_SIZE][BLOCK_SIZE];
    int tid = threadIdx.x;
    for (int i = 0; i < BLOCK_SIZE; i++) {
        s[i][tid] = m[i * BLOCK_SIZE + tid];
        if (threadIdx.x > i) {
            s[tid][i] /= s[i][i];
        }
    }
    m[tid] = s[tid][0];
}

void host(float* m) {
    lu<<<1, BLOCK_SIZE>>>(m);
}
