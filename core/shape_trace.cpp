#include "core/shape_trace.h"

#include "core/problem_reader.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>

namespace hone::core::detail {
namespace {

const char* const kCountColumn = "count";

std::string trim(std::string_view s)
{
    size_t b = 0;
    size_t e = s.size();
    while (b < e && std::isspace(static_cast<unsigned char>(s[b])))
        ++b;
    while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1])))
        --e;
    return std::string(s.substr(b, e - b));
}

bool isSymbol(std::string_view s)
{
    if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_'))
        return false;
    return std::all_of(
        s.begin(), s.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

std::optional<int64_t> parseExtent(const std::string& s)
{
    int64_t v = 0;
    const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
    if (r.ec != std::errc() || r.ptr != s.data() + s.size() || v <= 0)
        return std::nullopt;
    return v;
}

std::optional<double> parseCount(const std::string& s)
{
    double v = 0;
    const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
    if (r.ec != std::errc() || r.ptr != s.data() + s.size() || !(v > 0) || !std::isfinite(v))
        return std::nullopt;
    return v;
}

class TraceReader {
public:
    explicit TraceReader(std::string fileName)
        : m_file(std::move(fileName))
    {
    }

    std::vector<TraceRow> readCsv(std::string_view text);
    std::vector<TraceRow> readJson(std::string_view text);

    [[noreturn]] void fail(int line, int column, const std::string& field, const std::string& message,
        const std::string& expected) const
    {
        throw ProblemError(m_file, line, column, field, message, expected);
    }

    /// Merges rows of one shape and checks the count of distinct shapes.
    std::vector<TraceRow> finish(std::vector<TraceRow> rows) const;

private:
    std::string m_file;
};

std::vector<TraceRow> TraceReader::readCsv(std::string_view text)
{
    std::vector<std::string> columns; // from the header
    std::string headerText;
    std::vector<TraceRow> rows;
    int line = 0;
    size_t at = 0;
    while (at <= text.size()) {
        const size_t end = std::min(text.find('\n', at), text.size());
        std::string_view raw = text.substr(at, end - at);
        at = end + 1;
        ++line;
        const std::string content = trim(raw);
        if (content.empty() || content[0] == '#')
            continue;
        std::vector<std::string> fields;
        std::vector<int> starts; // 1-based column of each field
        size_t f = 0;
        while (true) {
            const size_t comma = std::min(raw.find(',', f), raw.size());
            fields.push_back(trim(raw.substr(f, comma - f)));
            starts.push_back(static_cast<int>(f) + 1);
            if (comma >= raw.size())
                break;
            f = comma + 1;
        }
        if (columns.empty()) {
            std::set<std::string> seen;
            for (size_t i = 0; i < fields.size(); ++i) {
                if (fields[i] != kCountColumn && !isSymbol(fields[i]))
                    fail(line, starts[i], "", "header column '" + fields[i] + "' is not a symbol name",
                        "a header line of shape symbols and count, such as \"M,N,count\"");
                if (!seen.insert(fields[i]).second)
                    fail(line, starts[i], "", "header names column '" + fields[i] + "' twice",
                        "each symbol and count once");
            }
            if (!seen.count(kCountColumn))
                fail(line, 1, "", "the header has no 'count' column",
                    "a header line of shape symbols and count, such as \"M,N,count\"");
            columns = fields;
            headerText = join(columns, ",");
            continue;
        }
        if (fields.size() != columns.size())
            fail(line, 1, "",
                "row has " + std::to_string(fields.size()) + " fields, the header " + std::to_string(columns.size()),
                "one value per header column (" + headerText + ")");
        TraceRow row;
        row.line = line;
        for (size_t i = 0; i < fields.size(); ++i) {
            if (columns[i] == kCountColumn) {
                const auto c = parseCount(fields[i]);
                if (!c)
                    fail(line, starts[i], kCountColumn, "'" + fields[i] + "' is not a positive count",
                        "a positive number of calls");
                row.count = *c;
                continue;
            }
            const auto v = parseExtent(fields[i]);
            if (!v)
                fail(line, starts[i], columns[i], "'" + fields[i] + "' is not a positive integer",
                    "a positive integer extent for " + columns[i]);
            row.shape[columns[i]] = *v;
        }
        rows.push_back(std::move(row));
    }
    if (columns.empty())
        fail(1, 1, "", "no header line", "a header line of shape symbols and count, such as \"M,N,count\"");
    return finish(std::move(rows));
}

/// Line and column of byte `offset` in `text` (1-based).
std::pair<int, int> lineColumn(std::string_view text, size_t offset)
{
    offset = std::min(offset, text.size());
    const int line = 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<long>(offset), '\n'));
    const size_t nl = offset == 0 ? std::string_view::npos : text.rfind('\n', offset - 1);
    return { line, static_cast<int>(offset - (nl == std::string_view::npos ? 0 : nl + 1)) + 1 };
}

/// Where each element of a top-level JSON array begins (byte offsets), for error lines.
std::vector<size_t> elementOffsets(std::string_view text)
{
    std::vector<size_t> out;
    int depth = 0;
    bool inString = false;
    bool expectElement = false;
    for (size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (inString) {
            if (c == '\\')
                ++i;
            else if (c == '"')
                inString = false;
            continue;
        }
        if (std::isspace(static_cast<unsigned char>(c)))
            continue;
        if (depth == 1 && expectElement) {
            out.push_back(i);
            expectElement = false;
        }
        if (c == '"')
            inString = true;
        else if (c == '[' || c == '{') {
            if (++depth == 1)
                expectElement = true;
        } else if (c == ']' || c == '}')
            --depth;
        else if (c == ',' && depth == 1)
            expectElement = true;
    }
    return out;
}

std::vector<TraceRow> TraceReader::readJson(std::string_view text)
{
    const std::string rowExpected = "an array of objects such as [{\"M\": 64, \"N\": 1000, \"count\": 120}]";
    nlohmann::json j;
    try {
        j = nlohmann::json::parse(text);
    } catch (const nlohmann::json::parse_error& e) {
        const auto [line, column] = lineColumn(text, e.byte == 0 ? 0 : e.byte - 1);
        fail(line, column, "", "not valid JSON", rowExpected);
    } catch (const nlohmann::json::out_of_range& e) {
        // A number past double's range ("1e400"): the parser names no position for it.
        fail(1, 1, "", std::string("a number is out of range (") + e.what() + ")", rowExpected);
    }
    if (!j.is_array())
        fail(1, 1, "", "the top level is not an array", rowExpected);
    const std::vector<size_t> offsets = elementOffsets(text);
    std::vector<TraceRow> rows;
    for (size_t i = 0; i < j.size(); ++i) {
        const auto [line, column] = lineColumn(text, i < offsets.size() ? offsets[i] : 0);
        const std::string path = indexed("", i);
        const nlohmann::json& e = j[i];
        if (!e.is_object())
            fail(line, column, path, "row is not an object", rowExpected);
        TraceRow row;
        row.line = line;
        bool counted = false;
        for (const auto& [key, value] : e.items()) {
            if (key == kCountColumn) {
                if (!value.is_number() || !(value.get<double>() > 0) || !std::isfinite(value.get<double>()))
                    fail(line, column, path + "." + key, "count " + value.dump() + " is not positive",
                        "a positive number of calls");
                row.count = value.get<double>();
                counted = true;
                continue;
            }
            if (!isSymbol(key))
                fail(line, column, path + "." + key, "'" + key + "' is not a symbol name",
                    "shape symbols and count as keys");
            if (!value.is_number_integer() || value.get<int64_t>() <= 0)
                fail(line, column, path + "." + key, value.dump() + " is not a positive integer",
                    "a positive integer extent for " + key);
            row.shape[key] = value.get<int64_t>();
        }
        if (!counted)
            fail(line, column, path + ".count", "row has no count", "a positive number of calls in every row");
        if (i > 0 && [&] {
                std::set<std::string> a, b;
                for (const auto& [s, v] : row.shape)
                    a.insert(s);
                for (const auto& [s, v] : rows.front().shape)
                    b.insert(s);
                return a != b;
            }())
            fail(line, column, path, "row names other symbols than row 0",
                "the same symbols in every row");
        rows.push_back(std::move(row));
    }
    return finish(std::move(rows));
}

std::vector<TraceRow> TraceReader::finish(std::vector<TraceRow> rows) const
{
    if (rows.empty())
        fail(1, 1, "", "no rows", "at least one row of shape symbols and a count");
    std::vector<TraceRow> merged;
    std::map<ShapeBinding, size_t> index;
    for (auto& r : rows) {
        if (const auto it = index.find(r.shape); it != index.end()) {
            TraceRow& m = merged[it->second];
            m.count += r.count;
            if (!std::isfinite(m.count)) // counts near DBL_MAX that overflow when added
                fail(r.line, 1, kCountColumn, "the counts of this shape add up past a double's range",
                    "counts of calls, or shares, of ordinary size");
            continue;
        }
        index.emplace(r.shape, merged.size());
        merged.push_back(std::move(r));
    }
    if (merged.size() > kMaxProductionShapes)
        fail(merged[kMaxProductionShapes].line, 1, "",
            std::to_string(merged.size()) + " distinct shapes; every surviving candidate is timed on each",
            "at most " + std::to_string(kMaxProductionShapes)
                + ": bucket the rows (round extents to the sizes that matter) before listing them");
    return merged;
}

} // namespace

std::vector<TraceRow> readShapeTrace(std::string_view text, const std::string& fileName)
{
    std::string ext = std::filesystem::path(fileName).extension().string();
    std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
    TraceReader reader(fileName);
    if (ext == ".csv")
        return reader.readCsv(text);
    if (ext == ".json")
        return reader.readJson(text);
    reader.fail(1, 1, "", "unknown trace format '" + ext + "'", "a .csv or .json file");
}

} // namespace hone::core::detail
