// The rendezvous store of a job with training.network.recovery live: one pod running
// `ppu-rendezvous --port 29500` (core/job_contract.h) from the job's image, and a headless Service
// <job>-rendezvous that every rank's MASTER_ADDR names. The store lives outside the
// ranks because any rank may die, rank 0 included, and the survivors must keep their group (and
// a replacement must find it) while it is recreated. Pure builders, plus how to recognise the pod.
#pragma once

#include "reconcile/job_spec.h"

namespace ppu::op {

// ppu.dev/role=rendezvous on the store's pod (beside ppu.dev/job, so the job's NetworkPolicy
// admits only the job's own pods to it); the Service selects both labels.
inline constexpr const char* kRoleLabel = "ppu.dev/role";
inline constexpr const char* kRendezvousRole = "rendezvous";
inline constexpr const char* kRendezvousContainer = contract::kRendezvousBinary;

// The store's pod <job>-rendezvous: the rank pods' image, pull policy, security contexts, service
// account and scheduling (object_builder.h), small CPU/memory requests, a /tmp emptyDir,
// restartPolicy Always: a store restarted in place is empty, and the ranks rebuild its keys
// (docs/RECOVERY.md); a store pod that is lost anyway is replaced (policy_recovery.cpp).
// `restart` is the job's restartCount when it is created (the ppu.dev/restart annotation). An
// elastic job's store also mounts the job's ConfigMap and keeps the desired size of its
// kDesiredRanksKey in the store (`ppu-rendezvous --desired-file`, docs/RESIZE.md).
json build_rendezvous_pod(const JobSpec& j, int restart);
// The Service <job>-rendezvous: headless (its name resolves to the store pod's IP, as rank 0's does
// for gang jobs; no kube-proxy needed), port contract::kRendezvousPort, publishing the pod's address
// before it is ready (the ranks retry their connection, there is no probe to wait for).
json build_rendezvous_service(const JobSpec& j);
// A pod of the job that is its rendezvous store (label ppu.dev/role=rendezvous).
bool is_rendezvous_pod(const json& pod);

}  // namespace ppu::op
