#include "backends/llm/price_table.h"

#include <stdexcept>

namespace hone::llm {

std::optional<Price> PriceTable::find(const std::string& model) const
{
    if (auto it = m_prices.find(model); it != m_prices.end())
        return it->second;
    std::optional<Price> best;
    size_t bestLen = 0;
    for (const auto& [name, price] : m_prices) {
        if (name.empty() || name.back() != '*')
            continue;
        std::string prefix = name.substr(0, name.size() - 1);
        if (model.starts_with(prefix) && (!best || prefix.size() > bestLen)) {
            best = price;
            bestLen = prefix.size();
        }
    }
    return best;
}

PriceTable PriceTable::fromJson(const nlohmann::json& j, const std::string& where)
{
    if (!j.is_object())
        throw std::runtime_error(where
            + ": 'prices' must be an object of model -> {\"input_per_mtok\": N, "
              "\"output_per_mtok\": N}");
    PriceTable t;
    for (auto it = j.begin(); it != j.end(); ++it) {
        const auto& v = it.value();
        auto num = [&](const char* key) {
            auto f = v.is_object() ? v.find(key) : v.end();
            if (!v.is_object() || f == v.end() || !f->is_number() || f->get<double>() < 0)
                throw std::runtime_error(where + ": prices." + it.key() + "." + key
                    + " must be a non-negative number (US dollars per million tokens)");
            return f->get<double>();
        };
        t.set(it.key(), Price { num("input_per_mtok"), num("output_per_mtok") });
    }
    return t;
}

} // namespace hone::llm
