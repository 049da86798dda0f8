#include "kube/cache_pruning.h"

namespace ppu::op {

void prune_pod(json& pod) {
  pod.erase("spec");
  if (!pod.contains("status") || !pod["status"].is_object()) return;
  json& st = pod["status"];
  for (const char* unused : {"hostIP", "hostIPs", "podIPs", "qosClass", "initContainerStatuses"}) st.erase(unused);
  if (st.contains("containerStatuses"))
    for (json& cs : st["containerStatuses"])
      for (const char* unused : {"image", "imageID", "containerID"}) cs.erase(unused);
}

void prune_job(json& job) { job.erase("spec"); }

}  // namespace ppu::op
