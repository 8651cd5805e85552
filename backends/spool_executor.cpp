#include "backends/spool_executor.h"

#include "core/protocol.h"
#include "core/utf8.h"

#include <fstream>
#include <iostream>

namespace hone::backends {
namespace {

const char* const kProbe = "probe.jsonl";
const char* const kHello = "hello.jsonl";
const char* const kRequests = "requests.jsonl";
const char* const kReplies = "replies.jsonl";

} // namespace

SpoolExecutor::SpoolExecutor(std::filesystem::path dir, int parallel)
    : m_dir(std::move(dir))
    , m_parallel(parallel < 1 ? 1 : parallel)
{
    std::error_code ec;
    std::filesystem::create_directories(m_dir, ec);
    if (ec)
        throw std::runtime_error("--spool " + m_dir.string() + ": cannot create the folder (" + ec.message()
            + "); pass a writable folder");
}

std::string SpoolExecutor::carryInstructions(const std::string& in, const std::string& out, bool append) const
{
    return "carry " + (m_dir / in).string() + " to the worker host, run 'hone-worker --stdio < " + in
        + (append ? " >> " : " > ") + out + "' there, and carry " + out + " back into " + m_dir.string();
}

std::map<std::string, nlohmann::json> SpoolExecutor::readReplies(const std::filesystem::path& file) const
{
    std::map<std::string, nlohmann::json> replies;
    std::ifstream in(file);
    std::string line;
    for (int lineNo = 1; std::getline(in, line); ++lineNo) {
        if (line.find_first_not_of(" \t\r") == std::string::npos)
            continue;
        nlohmann::json msg = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
        const std::string where = file.string() + ":" + std::to_string(lineNo);
        const bool firstTime = m_warned.insert(where).second;
        if (msg.is_discarded() || !msg.is_object() || !msg.contains("id") || !msg["id"].is_string()) {
            if (firstTime)
                std::cerr << "hone: warning: " << where
                          << ": not a worker message (a JSON object with a string id); line skipped, its request "
                             "stays pending\n";
            continue;
        }
        const std::string type = msg.value("type", std::string());
        if (type != "result" && type != "hello" && type != "ceilings")
            continue; // progress, log
        const int version = msg.value("protocol", -1);
        if (version != core::protocol::kVersion) {
            if (firstTime)
                std::cerr << "hone: warning: " << where << ": the worker speaks protocol version " << version
                          << ", this hone speaks version " << core::protocol::kVersion
                          << "; line skipped (deploy a matching hone-worker)\n";
            continue;
        }
        std::string id = msg["id"].get<std::string>(); // before the move: `=` runs its right side first
        replies[id] = std::move(msg);
    }
    return replies;
}

nlohmann::json SpoolExecutor::probeReply(const std::string& type, const std::string& id)
{
    if (!m_probeRead) {
        if (!std::filesystem::exists(m_dir / kHello)) {
            std::ofstream probe(m_dir / kProbe, std::ios::trunc);
            nlohmann::json hello = core::protocol::makeMessage("hello");
            hello["id"] = "hello";
            probe << hello.dump() << "\n";
            for (const char* kind : {"cpu", "cuda"}) {
                nlohmann::json cal = core::protocol::makeMessage("calibrate");
                cal["id"] = std::string("calibrate-") + kind;
                cal["kind"] = kind;
                probe << cal.dump() << "\n";
            }
            if (!probe)
                throw std::runtime_error("cannot write " + (m_dir / kProbe).string());
            throw SpoolWaiting("the spool has no worker description yet: " + carryInstructions(kProbe, kHello, false)
                + "; then run this command again");
        }
        m_probe = readReplies(m_dir / kHello);
        m_probeRead = true;
    }
    auto it = m_probe.find(id);
    if (it == m_probe.end())
        throw std::runtime_error((m_dir / kHello).string() + " has no reply with id '" + id + "'; write it again: "
            + carryInstructions(kProbe, kHello, false));
    if (it->second.value("type", std::string()) != type) {
        const nlohmann::json& r = it->second;
        const std::string why = r.contains("failure") ? r["failure"].value("message", r.dump()) : r.dump();
        throw std::runtime_error("the spooled worker could not answer '" + id + "': " + why);
    }
    return it->second;
}

nlohmann::json SpoolExecutor::hello()
{
    return probeReply("hello", "hello");
}

nlohmann::json SpoolExecutor::ceilings(const std::string& kind)
{
    return probeReply("ceilings", "calibrate-" + kind);
}

void SpoolExecutor::writeRequests() const
{
    const std::filesystem::path file = m_dir / kRequests;
    const std::filesystem::path tmp = m_dir / (std::string(kRequests) + ".tmp");
    {
        std::ofstream out(tmp, std::ios::trunc);
        for (const auto& [id, req] : m_pending)
            out << core::dumpJson(req) << "\n";
        if (!out)
            throw std::runtime_error("cannot write " + tmp.string());
    }
    std::filesystem::rename(tmp, file);
}

void SpoolExecutor::submit(core::EvalJob job)
{
    auto replies = readReplies(m_dir / kReplies);
    if (auto it = replies.find(job.id); it != replies.end() && it->second.value("type", std::string()) == "result") {
        m_done.push_back(core::EvalDone {job.id, it->second, 0});
        ++m_loaded;
    } else {
        m_pending.emplace_back(job.id, std::move(job.request));
    }
    // Rewritten on every submit, answered or not: a resumed session whose requests were all
    // answered must not leave the last round's file behind as if they were still pending.
    writeRequests();
}

std::optional<core::EvalDone> SpoolExecutor::next(std::chrono::milliseconds)
{
    if (m_done.empty() && !m_pending.empty()) {
        // Replies may have arrived since the requests were written (the same process can wait
        // for a worker fed by hand, as the tests do).
        auto replies = readReplies(m_dir / kReplies);
        for (auto it = m_pending.begin(); it != m_pending.end();) {
            auto r = replies.find(it->first);
            if (r != replies.end() && r->second.value("type", std::string()) == "result") {
                m_done.push_back(core::EvalDone {it->first, r->second, 0});
                ++m_loaded;
                it = m_pending.erase(it);
            } else {
                ++it;
            }
        }
        writeRequests();
    }
    if (m_done.empty()) {
        if (m_pending.empty())
            return std::nullopt;
        throw SpoolWaiting(std::to_string(m_pending.size()) + " request(s) wait for replies: "
            + carryInstructions(kRequests, kReplies, true) + "; then resume the session with --spool "
            + m_dir.string());
    }
    core::EvalDone done = std::move(m_done.front());
    m_done.pop_front();
    return done;
}

void SpoolExecutor::cancelAll()
{
    m_done.clear();
}

} // namespace hone::backends
