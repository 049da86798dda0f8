// The PPUJob API's fields, each written once. A struct of the API (the spec fields the operator
// reads, job_spec.h; the status it writes and reads, ppujob_status.h) is declared from a list of
// one line per field,
//   F(type, member, "jsonKey", default, "schema", "doc")
// and that list is all there is: the struct's members come from it (PPU_DECLARE_FIELD), the JSON
// reader and writer walk it (FieldList<T>::visit), and ppu-crd renders the CRD's schema of the
// struct from it (operator/src/crd/field_schema.h). There:
//   type     the C++ type; it decides the OpenAPI type (integer, string, boolean, an object of a
//            listed struct, an array, optional = may be absent)
//   default  the member's initial value; for a spec struct (FieldList<T>::kDefaults) it is also
//            the CRD's `default:` of a member that is neither optional nor required
//   schema   further OpenAPI attributes as the inside of a YAML flow mapping ("format: int64,
//            minimum: 0"); `required: true` lists the key in its object's `required`
//   doc      the description ("" = none)
// Adding a field is one line in its list, then `ninja -C build generate-schema` (the ctest
// operator.crd_file fails until the CRD is rewritten).
#pragma once

#include <stdexcept>
#include <string>

namespace ppu::op {

// One line of a field list as data (what the visitors see beside the member).
struct ApiField {
  const char* key;     // the JSON key, e.g. "outerRound"
  const char* schema;  // OpenAPI attributes, the inside of a YAML flow mapping; "" = none
  const char* doc;     // the description; "" = none
};

// Specialised (PPU_FIELD_LIST) for every struct declared from a field list; T is one iff
// kIsFieldStruct<T>.
template <class T>
struct FieldList {
  static constexpr bool kListed = false;
};
template <class T>
inline constexpr bool kIsFieldStruct = FieldList<T>::kListed;

// clang-format off
#define PPU_DECLARE_FIELD(type, member, key, default_value, schema, doc) type member = default_value;
#define PPU_VISIT_FIELD(type, member, key, default_value, schema, doc) f(::ppu::op::ApiField{key, schema, doc}, self.member);
// FieldList<Struct>: visit(self, f) calls f(ApiField, member) for each line of FIELDS in order
// (self may be const); kDefaults: the members' initial values are the CRD's defaults.
#define PPU_FIELD_LIST(Struct, FIELDS, renders_defaults)                       \
  template <>                                                                  \
  struct FieldList<Struct> {                                                   \
    static constexpr bool kListed = true;                                      \
    static constexpr bool kDefaults = renders_defaults;                        \
    static constexpr const char* kName = #Struct;                              \
    template <class Self, class F>                                             \
    static void visit(Self& self, F&& f) { FIELDS(PPU_VISIT_FIELD) }           \
  };
// clang-format on

// The JSON key of a member of a listed struct, e.g. key_of(&PPUJobStatus::outer_round) ==
// "outerRound" (printer columns and tests name fields this way). Throws std::logic_error for a
// member that is not in the list.
template <class C, class M>
std::string key_of(M C::*member) {
  const C probe{};
  const void* wanted = &(probe.*member);
  std::string key;
  FieldList<C>::visit(probe, [&](const ApiField& field, const auto& m) {
    if (static_cast<const void*>(&m) == wanted) key = field.key;
  });
  if (key.empty())
    throw std::logic_error(std::string("a member of ") + FieldList<C>::kName + " that is not in its list");
  return key;
}

}  // namespace ppu::op
