// The PPUJob spec fields the operator passes to its pods as written, each key spelled once:
// object_builder, export_job and rendezvous read them by these names, and crd/spec_passthrough.cpp
// writes their schemas under them (it throws std::logic_error if its keys are not kAll, in order).
// The fields inside them (a volume source, a security context, an affinity) are corev1's and keep
// corev1's spelling.
#pragma once

#include <array>

namespace ppu::op::passthrough {

inline constexpr const char* kImagePullPolicy = "imagePullPolicy";
inline constexpr const char* kCommand = "command";
inline constexpr const char* kArgs = "args";
inline constexpr const char* kEnv = "env";
inline constexpr const char* kPodSecurityContext = "podSecurityContext";
inline constexpr const char* kSecurityContext = "securityContext";
inline constexpr const char* kResources = "resources";
inline constexpr const char* kCheckpoint = "checkpoint";
inline constexpr const char* kData = "data";
inline constexpr const char* kScheduling = "scheduling";

// Every passthrough key, in the order the CRD lists them.
inline constexpr std::array<const char*, 10> kAll = {
    kImagePullPolicy, kCommand,   kArgs,       kEnv,  kPodSecurityContext,
    kSecurityContext, kResources, kCheckpoint, kData, kScheduling};

}  // namespace ppu::op::passthrough
