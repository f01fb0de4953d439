#include "formats/writer.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/platform.h"
#include "base/printable.h"
#include "kernels/quant_types.h"
#include "formats/gguf.h"

namespace hearth {

// Paths of unfinished temporary files, for remove_unfinished_checkpoints(). A fixed array of
// fixed buffers, because a signal handler may not allocate.
static constexpr int kMaxOpen = 4;
static char g_unfinished[kMaxOpen][4096];

static void track(const std::string& p, bool add) {
    for (auto& slot : g_unfinished) {
        if (add && slot[0] == 0 && p.size() < sizeof slot) {
            std::memcpy(slot, p.c_str(), p.size() + 1);
            return;
        }
        if (!add && p == slot) {
            slot[0] = 0;
            return;
        }
    }
}

void remove_unfinished_checkpoints() {
    for (auto& slot : g_unfinished)
        if (slot[0]) unlink(slot);
}

CheckpointWriter::~CheckpointWriter() {
    if (f_) fclose(f_);
    if (!committed_ && !tmp_path_.empty()) {
        unlink(tmp_path_.c_str());
        track(tmp_path_, false);
    }
}

std::string CheckpointWriter::fail(const std::string& why) {
    if (f_) fclose(f_);
    f_ = nullptr;
    if (!tmp_path_.empty()) {
        unlink(tmp_path_.c_str());
        track(tmp_path_, false);
        tmp_path_.clear();
    }
    return why;
}

static uint64_t align_up(uint64_t x, uint64_t alignment) { return (x + alignment - 1) / alignment * alignment; }

bool parse_checkpoint_format(const std::string& name, CheckpointFormat* out) {
    const std::string lower = ascii_lower(name);
    if (lower == "hearth")
        *out = CheckpointFormat::hearth;
    else if (lower == "gguf")
        *out = CheckpointFormat::gguf;
    else
        return false;
    return true;
}

const char* checkpoint_format_name(CheckpointFormat format) { return format == CheckpointFormat::gguf ? "GGUF" : "hearth"; }

CheckpointFormat checkpoint_format_for_path(const std::string& path) {
    const size_t dot = path.rfind('.'), slash = path.rfind('/');
    CheckpointFormat f = CheckpointFormat::hearth;
    if (dot != std::string::npos && (slash == std::string::npos || dot > slash))
        parse_checkpoint_format(path.substr(dot + 1), &f);
    return f;
}

// The id the file stores for a tensor's (type, layout); false when the format cannot hold it:
// hearth v2 only the types run computes with, in either layout (format.h, hearth_type_id);
// GGUF any type ggml defines for files (not q8_K, an activation type), in the plain layout.
static bool stored_type_id(CheckpointFormat format, const TensorSpec& t, uint32_t* id) {
    if (format == CheckpointFormat::hearth) return hearth_type_id(t.type, t.layout, id);
    *id = t.type;
    return t.layout == Layout::rows && type_is_known(t.type) && type_traits(t.type)->use != USE_ACT;
}

static void put(std::string* out, const void* p, size_t n) { out->append(static_cast<const char*>(p), n); }

std::string CheckpointWriter::open(const std::string& path, CheckpointFormat format, const Metadata& meta,
                                   const std::vector<TensorSpec>& tensors) {
    const bool gguf = format == CheckpointFormat::gguf;
    // GGUF readers assume 32 unless general.alignment says otherwise; this writer always
    // uses 32 and writes no key, so a key in the metadata would contradict the layout.
    if (gguf && meta.has("general.alignment")) return "metadata sets general.alignment; the GGUF writer aligns to 32";
    std::vector<uint64_t> sizes;
    for (const TensorSpec& t : tensors) {
        if (t.name.empty() || t.name.size() >= size_t(kTensorNameBytes))
            return "tensor name '" + t.name + "' is empty or too long";
        uint32_t id;
        if (!stored_type_id(format, t, &id))
            return "tensor " + t.name + ": a " + checkpoint_format_name(format) + " file cannot hold type " + type_name(t.type) +
                   (t.layout == Layout::rows_x8 ? " with interleaved rows" : "");
        sizes.push_back(tensor_bytes(t.type, t.n_dims, t.shape));
        if (sizes.back() == 0) return "tensor " + t.name + ": shape does not fit type " + type_name(t.type);
    }
    const uint64_t alignment = gguf ? kGgufDefaultAlignment : kTensorAlignment;
    const std::string meta_bytes = meta.serialize();

    // What comes before the data is sized first: where the data starts fixes every offset.
    uint64_t head_bytes = 0;
    if (gguf) {
        head_bytes = 4 + 4 + 8 + 8 + meta_bytes.size();
        for (const TensorSpec& t : tensors) head_bytes += 8 + t.name.size() + 4 + 8 * uint64_t(t.n_dims) + 4 + 8;
    } else {
        head_bytes = sizeof(FileHeaderV2) + meta_bytes.size() + tensors.size() * sizeof(TensorEntry);
    }
    const uint64_t data_start = align_up(head_bytes, alignment);
    // Each tensor at the first aligned offset after the previous one: the only layout
    // llama.cpp's reader accepts (it wants each offset to be the previous one plus its size
    // padded to the alignment), and hearth's since version 1.
    placements_.clear();
    uint64_t end = data_start;
    for (uint64_t bytes : sizes) {
        placements_.push_back({align_up(end, alignment), bytes});
        end = placements_.back().offset + bytes;
    }
    // A hearth file ends where its last tensor does (its header states the size, which a
    // reader checks); llama.cpp's writer pads the last GGUF tensor too, so that the data
    // section is the sum of padded sizes its reader computes, and so does this one.
    file_bytes_ = gguf ? align_up(end, alignment) : end;

    std::string head;
    if (gguf) {
        const uint32_t version = 3;
        const uint64_t n_tensors = tensors.size(), n_kv = meta.size();
        put(&head, kGgufMagic, 4);
        put(&head, &version, 4);
        put(&head, &n_tensors, 8);
        put(&head, &n_kv, 8);
        head += meta_bytes;
        for (size_t i = 0; i < tensors.size(); i++) {
            const TensorSpec& t = tensors[i];
            const uint64_t name_len = t.name.size(), offset = placements_[i].offset - data_start;
            const uint32_t n_dims = uint32_t(t.n_dims);
            put(&head, &name_len, 8);
            head += t.name;
            put(&head, &n_dims, 4);
            for (int d = t.n_dims - 1; d >= 0; d--) put(&head, &t.shape[d], 8);  // GGUF lists the innermost first
            put(&head, &t.type, 4);
            put(&head, &offset, 8);
        }
    } else {
        FileHeaderV2 h;
        std::memset(&h, 0, sizeof h);
        std::memcpy(h.magic, kCheckpointMagic, sizeof h.magic);
        h.version = kCheckpointVersion;
        h.header_bytes = sizeof(FileHeaderV2);
        h.n_metadata = meta.size();
        h.metadata_offset = sizeof(FileHeaderV2);
        h.n_tensors = tensors.size();
        h.tensor_table_offset = h.metadata_offset + meta_bytes.size();
        h.data_offset = data_start;
        h.file_bytes = file_bytes_;
        put(&head, &h, sizeof h);
        head += meta_bytes;
        for (size_t i = 0; i < tensors.size(); i++) {
            const TensorSpec& t = tensors[i];
            TensorEntry e;
            std::memset(&e, 0, sizeof e);
            std::memcpy(e.name, t.name.data(), t.name.size());
            stored_type_id(format, t, &e.type);  // checked above
            e.n_dims = uint32_t(t.n_dims);
            for (int d = 0; d < kMaxDims; d++) e.shape[d] = d < t.n_dims ? t.shape[d] : 0;
            e.offset = placements_[i].offset;
            e.bytes = placements_[i].bytes;
            put(&head, &e, sizeof e);
        }
    }
    if (head.size() != head_bytes)
        return "internal error: the file's head is " + std::to_string(head.size()) + " bytes, not " + std::to_string(head_bytes);
    head.resize(size_t(data_start), '\0');

    // The temporary file: beside the target (so that the rename stays on one file system),
    // named unpredictably and created exclusively (mkstemp: O_CREAT|O_EXCL), so that nothing
    // planted at a guessable name — a symlink to another file of the user's — is written through.
    path_ = path;
    std::string tmpl = path + ".partial-XXXXXX";
    const int fd = mkstemp(&tmpl[0]);
    if (fd < 0) return "cannot create a file beside " + path + ": " + std::strerror(errno);
    tmp_path_ = tmpl;
    track(tmp_path_, true);
    // mkstemp makes the file private (0600); the model gets what a plain create would give, or
    // the permissions of the file it replaces (as an editor's save keeps them; not setuid bits).
    const mode_t mask = umask(0);
    umask(mask);
    struct stat old_st;
    const mode_t mode = stat(path.c_str(), &old_st) == 0 && S_ISREG(old_st.st_mode) ? (old_st.st_mode & 0777) : (0666 & ~mask);
    f_ = fchmod(fd, mode) == 0 ? fdopen(fd, "wb") : nullptr;
    if (!f_) {
        const std::string why = std::strerror(errno);
        close(fd);
        return fail("cannot write " + tmp_path_ + ": " + why);
    }
    if (fwrite(head.data(), 1, head.size(), f_) != head.size())
        return fail("cannot write " + tmp_path_ + ": " + std::strerror(errno));
    at_ = head.size();
    current_ = 0;
    written_ = 0;
    return "";
}

// Zeros up to `offset`: the padding before a tensor or at the end.
std::string CheckpointWriter::pad_to(uint64_t offset) {
    static const char zeros[256] = {};
    while (at_ < offset) {
        const size_t n = size_t(std::min<uint64_t>(offset - at_, sizeof zeros));
        if (fwrite(zeros, 1, n, f_) != n) return fail("cannot write " + tmp_path_ + ": " + std::strerror(errno));
        at_ += n;
    }
    return "";
}

std::string CheckpointWriter::write(const void* data, size_t bytes) {
    if (!f_) return "checkpoint is not open";
    const uint8_t* p = static_cast<const uint8_t*>(data);
    while (bytes > 0) {
        if (current_ >= placements_.size()) return fail("more tensor data than the table describes");
        const Placement& t = placements_[current_];
        if (written_ == 0) {
            std::string err = pad_to(t.offset);
            if (!err.empty()) return err;
        }
        size_t n = size_t(std::min<uint64_t>(bytes, t.bytes - written_));
        if (fwrite(p, 1, n, f_) != n) return fail("cannot write " + tmp_path_ + ": " + std::strerror(errno));
        p += n;
        bytes -= n;
        written_ += n;
        at_ += n;
        if (written_ == t.bytes) {
            current_++;
            written_ = 0;
        }
    }
    return "";
}

std::string CheckpointWriter::commit(const std::function<std::string(const std::string& path)>& check) {
    if (!f_) return "checkpoint is not open";
    if (current_ != placements_.size())
        return fail("tensor data is incomplete (" + std::to_string(current_) + " of " + std::to_string(placements_.size()) +
                    " tensors)");
    std::string err = pad_to(file_bytes_);
    if (!err.empty()) return err;
    // Every byte on the disk before the name appears: a full disk shows up here, not later.
    if (fflush(f_) != 0 || fsync(fileno(f_)) != 0) return fail("cannot write " + tmp_path_ + ": " + std::strerror(errno));
    // Written pages sit in the page cache in small pieces; dropped, the file is read afresh when
    // run maps it, in 2 MB pages (formats/mapped_file.cpp).
    drop_file_cache(fileno(f_));
    const int closed = fclose(f_);
    f_ = nullptr;
    if (closed != 0) return fail("cannot write " + tmp_path_ + ": " + std::strerror(errno));
    if (check) {
        const std::string err = check(tmp_path_);
        if (!err.empty()) return fail("the file written does not load, so it was removed: " + err);
    }
    if (rename(tmp_path_.c_str(), path_.c_str()) != 0) return fail("cannot rename to " + path_ + ": " + std::strerror(errno));
    track(tmp_path_, false);
    committed_ = true;
    // And the new name itself, so that a crash right after this does not lose the file.
    const size_t slash = path_.rfind('/');
    const int dir = ::open(slash == std::string::npos ? "." : path_.substr(0, slash + 1).c_str(), O_RDONLY | O_DIRECTORY);
    if (dir >= 0) {
        fsync(dir);
        close(dir);
    }
    return "";
}

}  // namespace hearth
