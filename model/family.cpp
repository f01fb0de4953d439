#include "model/family.h"

#include <cstring>

namespace hearth {

// Each in its own file under model/families/.
extern const ModelFamily kLlamaFamily, kQwen2Family, kQwen3Family;
static const ModelFamily* const kFamilies[] = {&kLlamaFamily, &kQwen2Family, &kQwen3Family};

const ModelFamily* find_family(const std::string& arch) {
    for (const ModelFamily* f : kFamilies)
        if (arch == f->arch) return f;
    return nullptr;
}

const ModelFamily* find_hf_family(const std::string& architecture, const std::string& model_type, const HfClass** cls) {
    for (const ModelFamily* f : kFamilies)
        for (const HfClass* c = f->hf_classes; c->architecture; c++)
            if (architecture == c->architecture || (architecture.empty() && model_type == c->model_type)) return *cls = c, f;
    return nullptr;
}

std::string family_names() {
    std::string s;
    for (const ModelFamily* f : kFamilies) s += (s.empty() ? "" : ", ") + std::string(f->arch);
    return s;
}

std::string hf_class_names() {
    std::string s;
    for (const ModelFamily* f : kFamilies)
        for (const HfClass* c = f->hf_classes; c->architecture; c++) s += (s.empty() ? "" : ", ") + std::string(c->architecture);
    return s;
}

const char* hf_tensor_name(const ModelFamily& f, const char* role, const char* role_hf_name) {
    for (const HfTensorName* n = f.hf_names; n && n->role; n++)
        if (std::strcmp(n->role, role) == 0) return n->hf_name;
    return role_hf_name;
}

}  // namespace hearth
