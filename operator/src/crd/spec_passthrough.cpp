#include "crd/spec_passthrough.h"

#include <stdexcept>
#include <string>
#include <utility>

#include "reconcile/job_spec.h"
#include "reconcile/object_builder.h"
#include "reconcile/spec_passthrough_keys.h"

namespace ppu::op::crd {

// Written by hand, in the CRD's own words: these are Kubernetes' types (corev1), which the operator
// copies into the pods as they are. The schema lists the fields the API server must keep (a
// structural schema prunes the others) and validates those that the restricted Pod Security
// Standard cares about.
namespace {

// The descriptions name the binary, paths and variable the operator gives every rank pod ($TRAIN,
// $CHECKPOINTS, $TMP, $CHECKPOINT_DIR_ENV below), replaced from their one definition before the
// text is read.
std::string with_names(std::string text) {
  const std::pair<std::string, std::string> names[] = {{"$TRAIN", contract::kTrainBinary},
                                                       {"$CHECKPOINTS", kCheckpointPath},
                                                       {"$TMP", kTmpPath},
                                                       {"$CHECKPOINT_DIR_ENV", contract::env::kCheckpointDir}};
  for (const auto& [from, to] : names)
    for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
      text.replace(at, from.size(), to);
  return text;
}

}  // namespace

YAML::Node spec_passthrough_schema() {
  YAML::Node schema = parse(with_names(R"yaml(
imagePullPolicy:
  type: string
  enum: [Always, IfNotPresent, Never]
command:
  type: array
  items: {type: string}
  description: Container command; default ["$TRAIN"].
args:
  type: array
  items: {type: string}
env:
  type: array
  description: Extra environment variables (corev1 EnvVar) for every rank.
  items: {type: object, x-kubernetes-preserve-unknown-fields: true}
podSecurityContext:
  type: object
  description: >-
    corev1 PodSecurityContext of every rank pod. Replaces (does not merge with) the default
    {runAsNonRoot: true, runAsUser: 65532, runAsGroup: 65532, fsGroup: 65532,
    fsGroupChangePolicy: OnRootMismatch, seccompProfile: {type: RuntimeDefault}}, which passes the
    restricted Pod Security Standard.
  properties:
    runAsUser: {type: integer, format: int64, minimum: 0}
    runAsGroup: {type: integer, format: int64, minimum: 0}
    runAsNonRoot: {type: boolean}
    fsGroup: {type: integer, format: int64, minimum: 0}
    fsGroupChangePolicy: {type: string, enum: [OnRootMismatch, Always]}
    supplementalGroups: {type: array, items: {type: integer, format: int64, minimum: 0}}
    supplementalGroupsPolicy: {type: string, enum: [Merge, Strict]}
    seccompProfile: {type: object, required: [type], properties: {type: {type: string, enum: [RuntimeDefault, Unconfined, Localhost]}, localhostProfile: {type: string}}, x-kubernetes-validations: [{rule: "self.type != 'Localhost' || has(self.localhostProfile)", message: "localhostProfile is required when type is Localhost"}]}
    appArmorProfile: {type: object, required: [type], properties: {type: {type: string, enum: [RuntimeDefault, Unconfined, Localhost]}, localhostProfile: {type: string}}}
    seLinuxOptions: {type: object, properties: {user: {type: string}, role: {type: string}, type: {type: string}, level: {type: string}}}
    seLinuxChangePolicy: {type: string, enum: [MountOption, Recursive]}
    sysctls:
      type: array
      items: {type: object, required: [name, value], properties: {name: {type: string}, value: {type: string}}}
    windowsOptions: {type: object, properties: {gmsaCredentialSpecName: {type: string}, gmsaCredentialSpec: {type: string}, runAsUserName: {type: string}, hostProcess: {type: boolean}}}
securityContext:
  type: object
  description: >-
    corev1 SecurityContext of the $TRAIN container. Replaces (does not merge with) the default
    {allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, runAsNonRoot: true,
    capabilities: {drop: [ALL]}}. The root filesystem is read-only; $TMP and $CHECKPOINTS are writable.
  properties:
    allowPrivilegeEscalation: {type: boolean}
    privileged: {type: boolean}
    readOnlyRootFilesystem: {type: boolean}
    runAsUser: {type: integer, format: int64, minimum: 0}
    runAsGroup: {type: integer, format: int64, minimum: 0}
    runAsNonRoot: {type: boolean}
    procMount: {type: string, enum: [Default, Unmasked]}
    capabilities:
      type: object
      properties:
        add: {type: array, items: {type: string}}
        drop: {type: array, items: {type: string}}
    seccompProfile: {type: object, required: [type], properties: {type: {type: string, enum: [RuntimeDefault, Unconfined, Localhost]}, localhostProfile: {type: string}}, x-kubernetes-validations: [{rule: "self.type != 'Localhost' || has(self.localhostProfile)", message: "localhostProfile is required when type is Localhost"}]}
    appArmorProfile: {type: object, required: [type], properties: {type: {type: string, enum: [RuntimeDefault, Unconfined, Localhost]}, localhostProfile: {type: string}}}
    seLinuxOptions: {type: object, properties: {user: {type: string}, role: {type: string}, type: {type: string}, level: {type: string}}}
    windowsOptions: {type: object, properties: {gmsaCredentialSpecName: {type: string}, gmsaCredentialSpec: {type: string}, runAsUserName: {type: string}, hostProcess: {type: boolean}}}
resources:
  type: object
  description: Per-rank corev1 ResourceRequirements (limits, requests; GPUs as nvidia.com/gpu).
  properties:
    limits: {type: object, x-kubernetes-preserve-unknown-fields: true}
    requests: {type: object, x-kubernetes-preserve-unknown-fields: true}
    claims:
      type: array
      items: {type: object, x-kubernetes-preserve-unknown-fields: true}
checkpoint:
  type: object
  description: Volume mounted at $CHECKPOINTS ($CHECKPOINT_DIR_ENV). A PVC claim name, or any corev1 volume source.
  properties:
    claimName: {type: string}
    volumeSource:
      type: object
      x-kubernetes-preserve-unknown-fields: true
      description: Any corev1 volume source; emptyDir and ephemeral are named here so that the spec.export rule can see them.
      properties:
        emptyDir: {type: object, x-kubernetes-preserve-unknown-fields: true}
        ephemeral: {type: object, x-kubernetes-preserve-unknown-fields: true}
data:
  type: object
  description: Volume mounted read-only at mountPath (default /data) for token shards.
  properties:
    claimName: {type: string}
    volumeSource: {type: object, x-kubernetes-preserve-unknown-fields: true}
    mountPath: {type: string, default: )yaml" +
                                       std::string(kDataPath) + R"yaml(}
scheduling:
  type: object
  properties:
    schedulerName: {type: string}
    priorityClassName: {type: string}
    serviceAccountName: {type: string}
    automountServiceAccountToken: {type: boolean, description: "default false: $TRAIN never calls the API server"}
    nodeSelector:
      type: object
      additionalProperties: {type: string}
    tolerations:
      type: array
      items: {type: object, x-kubernetes-preserve-unknown-fields: true}
    affinity: {type: object, x-kubernetes-preserve-unknown-fields: true}
)yaml"),
                            "spec_passthrough.cpp");
  // Keyed by the names the operator reads them by (reconcile/spec_passthrough_keys.h), in order.
  size_t i = 0;
  for (const auto& field : schema) {
    const auto key = field.first.as<std::string>();
    if (i >= passthrough::kAll.size() || key != passthrough::kAll[i])
      throw std::logic_error("spec_passthrough.cpp: field '" + key + "' at position " + std::to_string(i) +
                             " is not reconcile/spec_passthrough_keys.h's kAll[" + std::to_string(i) + "]");
    ++i;
  }
  if (i != passthrough::kAll.size())
    throw std::logic_error("spec_passthrough.cpp lists " + std::to_string(i) + " fields, spec_passthrough_keys.h " +
                           std::to_string(passthrough::kAll.size()));
  return schema;
}

}  // namespace ppu::op::crd
