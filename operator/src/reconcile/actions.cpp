#include "reconcile/actions.h"

namespace ppu::op {

const char* action_name(const Action& a) {
  return std::visit(Overloaded{
                        [](const UpdateStatus&) { return "UpdateStatus"; },
                        [](const CreateObject&) { return "Create"; },
                        [](const PatchObject&) { return "Patch"; },
                        [](const PatchStatusOf&) { return "PatchStatus"; },
                        [](const DeleteObject& d) { return d.grace_period_seconds == 0 ? "ForceDelete" : "Delete"; },
                        [](const DeletePPUJob&) { return "DeleteJob"; },
                        [](const RecordEvent&) { return "Event"; },
                    },
                    a);
}

std::string describe(const Action& a) {
  const std::string jobs = std::string(resource(ResourceKind::PPUJob).plural) + "/";
  const std::string target = std::visit(
      Overloaded{
          [&](const UpdateStatus& u) { return jobs + u.name; },
          [](const CreateObject& c) { return std::string(resource(c.kind).plural) + "/" + c.name; },
          [](const PatchObject& p) { return std::string(resource(p.kind).plural) + "/" + p.name; },
          [](const PatchStatusOf& p) { return std::string(resource(p.kind).plural) + "/" + p.name + "/status"; },
          [](const DeleteObject& d) { return std::string(resource(d.kind).plural) + "/" + d.name; },
          [&](const DeletePPUJob& d) { return jobs + d.name; },
          [](const RecordEvent& e) { return e.reason; },
      },
      a);
  return std::string(action_name(a)) + " " + target;
}

}  // namespace ppu::op
