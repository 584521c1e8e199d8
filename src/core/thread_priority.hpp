// Lowering the scheduling priority of the calling thread (Linux nice values are per thread).
//
// The loader's threads decode and copy flat out while a training loop's one Python thread
// launches the model's kernels; on a machine whose cores the loader fills, that thread waits
// for a core and the GPU for its launches. A higher nice value for the loader's threads lets
// the training thread run first. An unprivileged process can raise a thread's nice value but
// not lower it again, so the change lasts for the thread's life.
#pragma once

namespace cubestream {

// Makes the calling thread's nice value at least the process's nice value at first use plus
// `increment` (clamped to 19). Cheap to call often: a thread that is already there returns at
// once. increment <= 0 does nothing. Failures (another OS, a sandbox refusing the call) are
// ignored: priority is a hint, not a requirement.
void lower_thread_priority(int increment) noexcept;

// The calling thread's nice value (for tests and stats).
int thread_nice() noexcept;

}  // namespace cubestream
