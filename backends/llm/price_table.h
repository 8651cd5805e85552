#pragma once

#include <nlohmann/json.hpp>

#include <map>
#include <optional>
#include <string>

namespace hone::llm {

/// US dollars per million tokens.
struct Price {
    double inputPerMTok = 0;
    double outputPerMTok = 0;
};

/// Model -> price, from the configuration (docs/LLM.md). Hone ships no prices: they change,
/// and a wrong number is worse than none. A name ending in '*' matches by prefix; the longest
/// match wins.
class PriceTable {
public:
    void set(const std::string& model, Price price) { m_prices[model] = price; }
    std::optional<Price> find(const std::string& model) const;
    bool empty() const { return m_prices.empty(); }

    /// `{"model": {"input_per_mtok": 3.0, "output_per_mtok": 15.0}, ...}`. Throws
    /// std::runtime_error naming `where` and the entry for anything else.
    static PriceTable fromJson(const nlohmann::json& j, const std::string& where);

private:
    std::map<std::string, Price> m_prices;
};

} // namespace hone::llm
