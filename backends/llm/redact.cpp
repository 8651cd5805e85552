#include "backends/llm/redact.h"

#include <algorithm>
#include <vector>

namespace hone::llm {

std::string redact(const std::string& text, const std::string& secret)
{
    if (secret.empty() || text.empty())
        return text;
    const size_t window = std::min<size_t>(8, secret.size());
    std::vector<bool> hidden(text.size(), false);
    bool any = false;
    for (size_t i = 0; i + window <= secret.size(); ++i) {
        const std::string piece = secret.substr(i, window);
        for (size_t at = text.find(piece); at != std::string::npos; at = text.find(piece, at + 1)) {
            std::fill(hidden.begin() + static_cast<std::ptrdiff_t>(at),
                hidden.begin() + static_cast<std::ptrdiff_t>(at + window), true);
            any = true;
        }
    }
    if (!any)
        return text;
    std::string out;
    out.reserve(text.size());
    for (size_t i = 0; i < text.size();) {
        if (!hidden[i]) {
            out += text[i++];
            continue;
        }
        while (i < text.size() && hidden[i])
            ++i;
        out += "[redacted]";
    }
    return out;
}

} // namespace hone::llm
