#include "model/draft.h"

#include <algorithm>
#include <cstdio>

namespace hearth {

void lookup_draft(const std::vector<int>& ids, int max_tokens, int shortest_ngram, std::vector<int>* draft) {
    draft->clear();
    const int size = int(ids.size());
    if (max_tokens <= 0) return;
    for (int n = std::min(kDraftLongestNgram, size - 1); n >= std::max(shortest_ngram, 1); n--) {
        const int* suffix = ids.data() + size - n;
        // The most recent occurrence that has at least one id after it, the suffix itself
        // excluded; it may overlap the suffix (a run of one repeated id drafts that id).
        for (int start = size - n - 1; start >= 0; start--) {
            if (!std::equal(suffix, suffix + n, ids.data() + start)) continue;
            const int from = start + n, to = std::min(size, from + max_tokens);
            draft->assign(ids.begin() + from, ids.begin() + to);
            return;
        }
    }
}

int DraftBackoff::next_length(int room) {
    if (max_tokens <= 0 || room <= 0) return 0;
    if (pause > 0) {
        pause--;
        return 0;
    }
    return std::min({length, max_tokens, room});
}

void DraftBackoff::verified(int proposed, int accepted) {
    if (2 * accepted < proposed) {
        misses = std::min(misses + 1, kMaxMisses);
        pause = std::min(1 << (misses - 1), kMaxPause);
        length = 1;
        return;
    }
    misses = std::max(misses - 1, 0);
    pause = 0;
    length = accepted == proposed ? std::min(2 * std::max(length, proposed), max_tokens) : std::min(accepted + 1, max_tokens);
}

std::string draft_summary(const DraftStats& s) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "drafts: %ld of %ld tokens accepted (%.1f%%) in %ld forward calls", s.accepted, s.proposed,
                  100.0 * s.acceptance(), s.verifications);
    return buf;
}

}  // namespace hearth
