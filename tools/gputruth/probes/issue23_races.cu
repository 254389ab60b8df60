// Probes for issue 23 (not fixtures: no rule speaks about them yet). Does racecheck see
// these on an H100? tools/gputruth/sync.py --probes runs them; the answer decides
// whether a rule is built.
#define B 128

// in-place neighbour update in global memory: thread i reads A[i+1], thread i+1 writes it
__global__ void global_neighbour_in_place(float* a, const float* in) {
    unsigned i = blockIdx.x * B + threadIdx.x;
    a[i] = a[i + 1] + in[i];
}

// every thread writes its own id to one shared address, then thread 0 reads it
__global__ void shared_one_address_different_values(float* out, const float* in) {
    __shared__ float x[1];
    x[0] = (float)threadIdx.x + in[0];
    __syncthreads();
    if (threadIdx.x == 0) out[blockIdx.x] = x[0];
}

// the benign form: every thread writes the same value
__global__ void shared_one_address_same_value(float* out, const float* in) {
    __shared__ float x[1];
    x[0] = in[0];
    __syncthreads();
    if (threadIdx.x == 0) out[blockIdx.x] = x[0];
}

void launch_probes(float* out, const float* in) {
    global_neighbour_in_place<<<2, B>>>(out, in);
    shared_one_address_different_values<<<2, B>>>(out, in);
    shared_one_address_same_value<<<2, B>>>(out, in);
}
