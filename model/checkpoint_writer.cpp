#include "checkpoint_writer.h"

#include <cerrno>
#include <cstring>
#include <unistd.h>

#include "../kernels/quant_types.h"
#include "metadata.h"
#include "tokenizer_metadata.h"

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

static uint64_t align_up(uint64_t x) { return (x + kTensorAlignment - 1) / kTensorAlignment * kTensorAlignment; }

std::string CheckpointWriter::open(const std::string& path, const ModelConfig& c, const TokenizerSpec& tokenizer,
                                   const std::vector<TensorSpec>& tensors) {
    std::string err = validate_config(c);
    if (!err.empty()) return "bad model configuration: " + err;
    path_ = path;
    tmp_path_ = path + ".partial-" + std::to_string(getpid());

    Metadata meta;
    config_to_metadata(c, &meta);
    tokenizer_to_metadata(tokenizer, &meta);
    const std::string meta_bytes = meta.serialize();
    FileHeaderV2 h;
    std::memset(&h, 0, sizeof h);
    std::memcpy(h.magic, kCheckpointMagic, sizeof h.magic);
    h.version = kCheckpointVersion;
    h.header_bytes = sizeof(FileHeaderV2);
    h.n_metadata = meta.size();
    h.metadata_offset = sizeof(FileHeaderV2);
    h.n_tensors = tensors.size();
    h.tensor_table_offset = h.metadata_offset + meta_bytes.size();
    h.data_offset = align_up(h.tensor_table_offset + tensors.size() * sizeof(TensorEntry));

    uint64_t at = h.data_offset;
    entries_.clear();
    for (const TensorSpec& t : tensors) {
        TensorEntry e;
        std::memset(&e, 0, sizeof e);
        if (t.name.empty() || t.name.size() >= sizeof e.name) return "tensor name '" + t.name + "' is empty or too long";
        std::memcpy(e.name, t.name.data(), t.name.size());
        e.type = t.type;
        e.n_dims = uint32_t(t.n_dims);
        for (int d = 0; d < kMaxDims; d++) e.shape[d] = d < t.n_dims ? t.shape[d] : 0;
        if (!type_is_storage(t.type)) return "tensor " + t.name + ": a checkpoint cannot hold type " + type_name(t.type);
        e.bytes = tensor_bytes(t.type, t.n_dims, t.shape);
        if (e.bytes == 0) return "tensor " + t.name + ": shape does not fit type " + type_name(t.type);
        e.offset = at;
        at = align_up(at + e.bytes);
        entries_.push_back(e);
    }
    // The last tensor is not padded: the file ends where its data ends.
    file_bytes_ = entries_.empty() ? h.data_offset : entries_.back().offset + entries_.back().bytes;
    h.file_bytes = file_bytes_;

    f_ = fopen(tmp_path_.c_str(), "wb");
    if (!f_) {
        std::string why = "cannot create " + tmp_path_ + ": " + std::strerror(errno);
        tmp_path_.clear();
        return why;
    }
    track(tmp_path_, true);
    bool ok = fwrite(&h, sizeof h, 1, f_) == 1 && fwrite(meta_bytes.data(), meta_bytes.size(), 1, f_) == 1;
    for (const TensorEntry& e : entries_) ok = ok && fwrite(&e, sizeof e, 1, f_) == 1;
    static const char zeros[kTensorAlignment] = {};
    uint64_t pad = h.data_offset - (h.tensor_table_offset + entries_.size() * sizeof(TensorEntry));
    if (pad) ok = ok && fwrite(zeros, pad, 1, f_) == 1;
    if (!ok) return fail("cannot write " + tmp_path_ + ": " + std::strerror(errno));
    current_ = 0;
    written_ = 0;
    return "";
}

std::string CheckpointWriter::write(const void* data, size_t bytes) {
    if (!f_) return "checkpoint is not open";
    const uint8_t* p = static_cast<const uint8_t*>(data);
    while (bytes > 0) {
        if (current_ >= entries_.size()) return fail("more tensor data than the table describes");
        const TensorEntry& e = entries_[current_];
        size_t n = size_t(std::min<uint64_t>(bytes, e.bytes - written_));
        if (fwrite(p, 1, n, f_) != n) return fail("cannot write " + tmp_path_ + ": " + std::strerror(errno));
        p += n;
        bytes -= n;
        written_ += n;
        if (written_ == e.bytes) {
            current_++;
            written_ = 0;
            if (current_ < entries_.size()) {
                static const char zeros[kTensorAlignment] = {};
                uint64_t pad = entries_[current_].offset - (e.offset + e.bytes);
                if (pad && fwrite(zeros, pad, 1, f_) != 1) return fail("cannot write " + tmp_path_ + ": " + std::strerror(errno));
            }
        }
    }
    return "";
}

std::string CheckpointWriter::commit() {
    if (!f_) return "checkpoint is not open";
    if (current_ != entries_.size()) return fail("tensor data is incomplete (" + std::to_string(current_) + " of " + std::to_string(entries_.size()) + " tensors)");
    if (fflush(f_) != 0 || fsync(fileno(f_)) != 0) return fail("cannot write " + tmp_path_ + ": " + std::strerror(errno));
    fclose(f_);
    f_ = nullptr;
    if (rename(tmp_path_.c_str(), path_.c_str()) != 0) return fail("cannot rename to " + path_ + ": " + std::strerror(errno));
    track(tmp_path_, false);
    committed_ = true;
    return "";
}
