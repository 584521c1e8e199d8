// The consumer-side objects of the loader: tensors, batches and their stream-ordered
// hand-over, and the statistics' JSON form.
#include "cubestream/loader.hpp"
#include "cuda/memory.hpp"
#include "pipeline/buffer_pool.hpp"

namespace cubestream {

std::int64_t Tensor::num_elements() const {
  std::int64_t n = 1;
  for (auto e : shape) n *= e;
  return n;
}

void Batch::wait_on(void* stream) const {
  if (inputs.device != DeviceKind::kCuda) return;
  if (ready_event) cuda::stream_wait_event(stream, ready_event.get(), inputs.device_index);
  // Remember the consumer's stream: the buffers are reused only after work queued there.
  for (const Tensor* t : {&inputs, targets ? &*targets : nullptr}) {
    if (t && t->storage) {
      t->storage->consumer_stream = stream;
      t->storage->consumer_stream_known = true;
    }
  }
}

void Batch::synchronize() const {
  if (inputs.device == DeviceKind::kCuda && ready_event) cuda::event_synchronize(ready_event.get());
}

nlohmann::json LoaderStats::to_json() const {
  return {{"batches", batches},
          {"samples", samples},
          {"units_fetched", units_fetched},
          {"units_missing", units_missing},
          {"cache_hits", cache_hits},
          {"bytes_fetched", bytes_fetched},
          {"bytes_decoded", bytes_decoded},
          {"bytes_delivered", bytes_delivered},
          {"busy_s", {{"fetch", fetch_s}, {"decode", decode_s}, {"assemble", assemble_s}, {"transfer", transfer_s}}},
          {"consumer_wait_s", consumer_wait_s},
          {"wall_s", wall_s},
          {"ready_queue_max", ready_queue_max},
          {"memory_peak", memory_peak},
          {"memory_limit", memory_limit},
          {"cache_bytes", cache_bytes},
          {"units_gpu_decoded", units_gpu_decoded},
          {"units_gpu_fallback", units_gpu_fallback},
          {"units_host_decoded", units_host_decoded},
          {"host_decode_share", host_decode_share},
          {"batches_built_on_host", batches_built_on_host},
          {"host_share_trials", host_share_trials},
          {"host_share_trials_kept", host_share_trials_kept},
          {"units_block_assembled", units_block_assembled},
          {"units_hinted", units_hinted},
          {"staging_pinned_calls", staging_pinned_calls},
          {"staging_pinned_s", staging_pinned_s},
          {"decode_path", decode_path}};
}

}  // namespace cubestream
