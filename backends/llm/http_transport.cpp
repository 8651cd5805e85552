#include "backends/llm/http_transport.h"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <memory>
#include <mutex>

namespace hone::llm {
namespace {

using Clock = std::chrono::steady_clock;

void globalInit()
{
    // curl_global_init is not thread-safe on older libcurl; once per process is what it wants.
    static std::once_flag once;
    std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

struct Transfer {
    const HttpTransport::DataSink* onData = nullptr;
    CURL* easy = nullptr;
    HttpResponse* response = nullptr;
    bool gotBody = false;
    bool aborted = false;
};

size_t onBody(char* ptr, size_t size, size_t count, void* user)
{
    auto* t = static_cast<Transfer*>(user);
    const size_t n = size * count;
    long status = 0;
    curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &status);
    t->response->status = static_cast<int>(status);
    t->response->body.append(ptr, n);
    t->gotBody = t->gotBody || n > 0;
    if (*t->onData && !(*t->onData)(static_cast<int>(status), std::string_view(ptr, n))) {
        t->aborted = true;
        return CURL_WRITEFUNC_ERROR;
    }
    return n;
}

size_t onHeader(char* ptr, size_t size, size_t count, void* user)
{
    auto* t = static_cast<Transfer*>(user);
    const size_t n = size * count;
    std::string line(ptr, n);
    if (line.rfind("HTTP/", 0) == 0) {
        t->response->headers.clear(); // a new response (after 100 Continue, say)
        return n;
    }
    size_t colon = line.find(':');
    if (colon == std::string::npos)
        return n;
    std::string name = line.substr(0, colon);
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
    std::string value = line.substr(colon + 1);
    value.erase(0, value.find_first_not_of(" \t"));
    value.erase(value.find_last_not_of(" \t\r\n") + 1);
    t->response->headers[name] = value;
    return n;
}

struct EasyDeleter {
    void operator()(CURL* c) const { curl_easy_cleanup(c); }
};
struct MultiDeleter {
    void operator()(CURLM* m) const { curl_multi_cleanup(m); }
};
struct ListDeleter {
    void operator()(curl_slist* l) const { curl_slist_free_all(l); }
};

} // namespace

HttpResponse HttpTransport::post(const HttpRequest& request, const DataSink& onData,
    const std::function<bool()>& firstTokenSeen, const std::atomic<bool>* cancel)
{
    globalInit();
    HttpResponse response;
    const auto started = Clock::now();
    auto finish = [&](TransportError e, std::string text) {
        response.error = e;
        response.errorText = std::move(text);
        response.totalMs = std::chrono::duration<double, std::milli>(Clock::now() - started).count();
        return response;
    };

    std::unique_ptr<CURL, EasyDeleter> easy(curl_easy_init());
    std::unique_ptr<CURLM, MultiDeleter> multi(curl_multi_init());
    if (!easy || !multi)
        return finish(TransportError::Other, "libcurl could not start a transfer (out of memory?)");
    std::unique_ptr<curl_slist, ListDeleter> headers;
    for (const auto& h : request.headers) {
        curl_slist* next = curl_slist_append(headers.get(), h.c_str());
        if (!next)
            return finish(TransportError::Other, "libcurl could not add a header (out of memory?)");
        (void)headers.release();
        headers.reset(next);
    }

    Transfer t;
    t.onData = &onData;
    t.easy = easy.get();
    t.response = &response;
    char errbuf[CURL_ERROR_SIZE] = { 0 };
    CURL* e = easy.get();
    curl_easy_setopt(e, CURLOPT_URL, request.url.c_str());
    curl_easy_setopt(e, CURLOPT_POST, 1L);
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, request.body.data());
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(request.body.size()));
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, headers.get());
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, onBody);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, &t);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, onHeader);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, &t);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(request.connectTimeout.count()));
    if (request.totalTimeout.count() > 0)
        curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, static_cast<long>(request.totalTimeout.count()));
    // Never follow redirects: a key must not travel to another host.
    curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(e, CURLOPT_USERAGENT, "hone/0.1");
    curl_multi_add_handle(multi.get(), e);

    TransportError stop = TransportError::None;
    while (true) {
        int running = 0;
        CURLMcode mc = curl_multi_perform(multi.get(), &running);
        if (mc != CURLM_OK) {
            curl_multi_remove_handle(multi.get(), e);
            return finish(TransportError::Other, curl_multi_strerror(mc));
        }
        if (running == 0)
            break;
        if (cancel && cancel->load()) {
            stop = TransportError::Cancelled;
            break;
        }
        if (request.firstTokenTimeout.count() > 0 && Clock::now() - started > request.firstTokenTimeout) {
            bool seen = firstTokenSeen ? firstTokenSeen() : t.gotBody;
            if (!seen) {
                stop = TransportError::FirstTokenTimeout;
                break;
            }
        }
        curl_multi_poll(multi.get(), nullptr, 0, 50, nullptr);
    }

    CURLcode rc = CURLE_OK;
    int queued = 0;
    while (CURLMsg* msg = curl_multi_info_read(multi.get(), &queued))
        if (msg->msg == CURLMSG_DONE)
            rc = msg->data.result;
    long status = 0;
    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
    response.status = static_cast<int>(status);
    curl_off_t connectUs = 0;
    curl_easy_getinfo(e, CURLINFO_CONNECT_TIME_T, &connectUs);
    curl_multi_remove_handle(multi.get(), e);

    if (stop == TransportError::Cancelled)
        return finish(stop, "cancelled");
    if (stop == TransportError::FirstTokenTimeout)
        return finish(
            stop, "no first token within " + std::to_string(request.firstTokenTimeout.count()) + " ms");
    if (rc == CURLE_OK)
        return finish(TransportError::None, {});
    std::string text = errbuf[0] ? std::string(errbuf) : std::string(curl_easy_strerror(rc));
    switch (rc) {
    case CURLE_WRITE_ERROR:
        return finish(t.aborted ? TransportError::Aborted : TransportError::Other, text);
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_URL_MALFORMAT:
    case CURLE_UNSUPPORTED_PROTOCOL:
        return finish(TransportError::Connect, text);
    case CURLE_OPERATION_TIMEDOUT:
        return finish(connectUs == 0 ? TransportError::ConnectTimeout : TransportError::TotalTimeout, text);
    case CURLE_GOT_NOTHING:
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_PARTIAL_FILE:
        return finish(TransportError::Reset, text);
    default:
        return finish(TransportError::Other, text);
    }
}

} // namespace hone::llm
