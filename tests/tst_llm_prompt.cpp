// The prompt builder (what a prompt holds, templates users can edit) and the response parser
// (what a reply must be to become a candidate).

#include "core/problem_spec.h"
#include "core/prompt_builder.h"
#include "core/response_parser.h"

#include <QTemporaryDir>
#include <QtTest>

#include <fstream>

using namespace hone::core;

namespace {

const char* kKernel = R"(// hone:knob VEC = 8 | 16
#include "hone/kernel.h"
#include <cmath>
#include <omp.h>
extern "C" int hone_run(const hone_args* args)
{
    (void)args;
    return 0;
}
)";

std::string fenced(const std::string& code, const std::string& lang = "cpp")
{
    return "Here it is:\n```" + lang + "\n" + code + "```\nDone.";
}

std::string kernelWith(const std::string& body)
{
    return "#include \"hone/kernel.h\"\n" + body
        + "\nextern \"C\" int hone_run(const hone_args*) { return 0; }\n";
}

ProblemSpec softmax()
{
    return loadProblem(std::string(HONE_SOURCE_DIR) + "/resources/problems/cpu/softmax");
}

MemoryEntry entry(NodeId id, const std::string& relation, const std::string& status)
{
    MemoryEntry e;
    e.node = id;
    e.relation = relation;
    e.sourceName = "cand" + std::to_string(id) + ".cpp";
    e.source = "// source of node " + std::to_string(id)
        + "\nextern \"C\" int hone_run(const hone_args*) { return 0; }\n";
    e.origin = "llm";
    e.status = status;
    if (status == "ok") {
        e.speedup = 1.5 + static_cast<double>(id);
        e.medianNs = 2.5e6;
        e.bound = "memory";
        e.fracBandwidth = 0.42;
        e.fracCompute = 0.03;
        e.evidence = "evidence of node " + std::to_string(id);
    } else {
        e.failureKind = "compile_error";
        e.failureMessage = "cand.cpp:7:3: error: 'rowsum' was not declared in this scope";
        e.feedback = "line 7:3: error: 'rowsum' was not declared in this scope";
    }
    return e;
}

PromptInputs inputs(const ProblemSpec& spec, MemoryOperator op)
{
    PromptInputs in;
    in.problem = &spec;
    in.target = "cpu";
    in.device = "cpu: Test CPU (2 cores)";
    in.toolchain = "g++ (Debian 12.2.0-14) 12.2.0";
    in.ceilings = { { "peak_gbps", 12.0 }, { "peak_gflops", 329.0 } };
    in.memory.op = op;
    in.memory.entries
        = { entry(5, "parent", "ok"), entry(2, "ancestor", "ok"), entry(7, "sibling", "failed") };
    in.knowledge = { "Vectorise the exponential: a polynomial on the reduced argument." };
    in.hints = { "Rows are long; parallelise over rows." };
    return in;
}

void write(const std::filesystem::path& p, const std::string& text)
{
    std::ofstream(p) << text;
}

} // namespace

class TestLlmPrompt : public QObject {
    Q_OBJECT
private slots:
    void parser_data()
    {
        QTest::addColumn<QString>("reply");
        QTest::addColumn<bool>("truncated");
        QTest::addColumn<QString>("lang");
        QTest::addColumn<QStringList>("allowed");
        QTest::addColumn<QString>("reason"); // empty: accepted

        auto row = [](const char* name, const std::string& reply, const char* reason, bool truncated = false,
                       const char* lang = "cpp", QStringList allowed = {}) {
            QTest::addRow("%s", name)
                << QString::fromStdString(reply) << truncated << QString(lang) << allowed << QString(reason);
        };
        row("one kernel", fenced(kKernel), "");
        row("tilde fence and a shell block", "```sh\nmake\n```\n~~~c++\n" + std::string(kKernel) + "~~~\n",
            "");
        row("no fence", "I would keep the kernel as it is.", "the reply has no fenced code block");
        row("no hone_run", fenced("int main() { return 0; }\n"),
            "no code block of the reply defines hone_run");
        row("two kernels", fenced(kKernel) + "\n" + fenced(kKernel), "2 code blocks of the reply");
        row("unclosed fence", "```cpp\n" + std::string(kKernel), "never closes; the reply looks truncated");
        row("finish length", fenced(kKernel), "cut off at the token limit (finish reason 'length')", true);
        row("too large", fenced(kernelWith("// " + std::string(300 * 1024, 'x'))),
            "KiB, over the limit of 200 KiB");
        row("fstream", fenced(kernelWith("#include <fstream>")),
            "#include <fstream> is not a standard header");
        row("dlfcn", fenced(kernelWith("#include <dlfcn.h>")), "#include <dlfcn.h> is not a standard header");
        row("library not allowed", fenced(kernelWith("#include <cblas.h>")), "[libraries] allowed (none)");
        row("library allowed", fenced(kernelWith("#include <cblas.h>")), "", false, "cpp", { "openblas" });
        row("system", fenced(kernelWith("static void f() { std::system(\"ls\"); }")),
            "system() starts a process");
        row("fork", fenced(kernelWith("static int f() { return fork(); }")), "fork() starts a process");
        row("dlopen", fenced(kernelWith("static void* f() { return dlopen(\"x.so\", 0); }")),
            "dlopen() loads a library");
        row("fopen", fenced(kernelWith("static void f() { fopen(\"/tmp/x\", \"w\"); }")),
            "fopen() does file I/O");
        row("ofstream", fenced(kernelWith("static void f() { std::ofstream o; }")), "ofstream does file I/O");
        row("inline asm on cpu", fenced(kernelWith("static void f() { asm volatile(\"nop\"); }")),
            "inline assembly is not allowed in CPU kernels");
        row("inline ptx on cuda",
            fenced(kernelWith("__device__ void f() { asm volatile(\"membar.gl;\"); }"), "cuda"), "", false,
            "cuda");
        row("constructor", fenced(kernelWith("__attribute__((constructor)) static void early() {}")),
            "load-time constructors and destructors are not allowed");
        row("pragma comment", fenced(kernelWith("#pragma comment(lib, \"evil\")")),
            "#pragma comment links libraries");
        row("forbidden words in comments and strings",
            fenced(kernelWith(
                "// never call system() or fork() here\nstatic const char* s = \"dlopen(x) asm\";")),
            "");
        row("malformed knob", fenced(kernelWith("// hone:knob VEC =")), "a // hone: annotation is malformed");
        row("refused flag", fenced(kernelWith("// hone:flags -fplugin=evil.so")),
            "hone:flags: compile flag '-fplugin=evil.so' is not allowed");
        row("unsatisfiable knobs", fenced(kernelWith("// hone:knob A = 1 | 2\n// hone:require A > 5")),
            "no assignment of the declared knobs satisfies");
    }
    void parser()
    {
        QFETCH(QString, reply);
        QFETCH(bool, truncated);
        QFETCH(QString, lang);
        QFETCH(QStringList, allowed);
        QFETCH(QString, reason);
        ReplyRules rules;
        rules.lang = lang.toStdString();
        for (const auto& a : allowed)
            rules.allowedLibraries.push_back(a.toStdString());
        ParsedReply r = parseReply(reply.toStdString(), truncated, truncated ? "length" : "stop", rules);
        if (reason.isEmpty()) {
            QVERIFY2(r.ok, r.reason.c_str());
            QVERIFY(r.source.find("hone_run") != std::string::npos);
            QVERIFY(r.source.find("```") == std::string::npos);
        } else {
            QVERIFY(!r.ok);
            QVERIFY2(QString::fromStdString(r.reason).contains(reason), r.reason.c_str());
        }
    }

    void parserKeepsTheKernelAndItsKnobs()
    {
        ParsedReply r = parseReply(fenced(kKernel), false, "stop", ReplyRules {});
        QVERIFY(r.ok);
        QCOMPARE(r.source, std::string(kKernel));
        QCOMPARE(r.knobs.knobs.size(), size_t(1));
        QCOMPARE(r.knobs.knobs[0].name, std::string("VEC"));
        // Forbidden constructs name their line within the kernel.
        auto bad = forbiddenConstructs("int a;\nint b;\nvoid f() { system(\"x\"); }\n", ReplyRules {});
        QCOMPARE(bad.size(), size_t(1));
        QVERIFY2(bad[0].starts_with("line 3: system()"), bad[0].c_str());
    }

    void proposePromptHoldsEverything()
    {
        ProblemSpec spec = softmax();
        PromptBuilder builder;
        Prompt p = builder.propose(inputs(spec, MemoryOperator::Combine));
        const std::string all = p.system + "\n" + p.user;
        auto has = [&](const std::string& s) {
            if (all.find(s) == std::string::npos)
                QFAIL(("the prompt lacks: " + s + "\n--- prompt ---\n" + all).c_str());
        };
        // Problem statement and ABI.
        has("Name: softmax (family softmax)");
        has("Row softmax of an M x N float32 matrix");
        has("- x: f32 [M, N]");
        has("- y: f32 [M, N]");
        has("{M=2048, N=1024}");
        has("f32: atol 1e-07, rtol 0.0001");
        has("flops = 5 * M * N");
        has("std::vector<double> e(static_cast<size_t>(N));"); // the reference
        has("int hone_run(const hone_args* args);"); // the ABI header
        has("hone_param_or");
        // Hardware.
        has("Device: cpu: Test CPU (2 cores)");
        has("Compiler: g++ (Debian 12.2.0-14) 12.2.0");
        has("copy bandwidth 12.0 GB/s, FMA peak 329.0 GFLOP/s");
        has("-O3 -march=native -fopenmp");
        // Memory: the parent with code and diagnosis, the ancestor's result, the failed sibling's error.
        has("combine: the kernel to improve, its ancestors and what was already tried from it");
        has("## #5 (parent) cand5.cpp, llm");
        has("// source of node 5");
        has("correct, 6.50x over the baseline (2.500 ms median). Diagnosis: memory-bound, 42% of copy "
            "bandwidth");
        has("evidence of node 5");
        has("## #2 (ancestor) cand2.cpp");
        has("## #7 (sibling) cand7.cpp");
        has("FAILED (compile_error)");
        has("'rowsum' was not declared in this scope");
        // Knowledge, hints, rules, contract.
        has("- Vectorise the exponential: a polynomial on the reduced argument.");
        has("- Rows are long; parallelise over rows.");
        has("NaN poison pattern");
        has("No caching between calls");
        has("inline assembly");
        has("Libraries allowed by this problem:\n  none.");
        has("exactly one fenced code block (```cpp)");
        has("at most 200 KiB");
        has("// hone:knob BLOCK = 64 | 128 | 256");
        // Ancestors are shown by result only; the parent and siblings with code.
        QVERIFY(all.find("// source of node 2") == std::string::npos);
        QVERIFY(all.find("// source of node 7") != std::string::npos);
        QVERIFY(all.find("{{") == std::string::npos);
        // Deterministic.
        Prompt again = builder.propose(inputs(spec, MemoryOperator::Combine));
        QCOMPARE(again.user, p.user);
        QCOMPARE(again.system, p.system);
    }

    void operatorsChooseWhatIsShown()
    {
        ProblemSpec spec = softmax();
        PromptBuilder builder;
        PromptInputs in = inputs(spec, MemoryOperator::Restart);
        in.memory.entries.clear();
        in.knowledge.clear();
        in.hints.clear();
        Prompt restart = builder.propose(in);
        QVERIFY(restart.user.find("Nothing is shown on purpose") != std::string::npos);
        QVERIFY(restart.user.find("Design a new kernel from scratch") != std::string::npos);
        QVERIFY(restart.user.find("# Knowledge") == std::string::npos); // empty sections vanish
        QVERIFY(restart.user.find("# Hints") == std::string::npos);

        Prompt inherit = builder.propose(inputs(spec, MemoryOperator::Inherit));
        QVERIFY(inherit.user.find("inherit: the kernel to improve, then its ancestors") != std::string::npos);
        QVERIFY(inherit.user.find("attack the bound it names") != std::string::npos);
    }

    void repairPromptShowsTheFailure()
    {
        ProblemSpec spec = softmax();
        PromptBuilder builder;
        PromptInputs in = inputs(spec, MemoryOperator::Inherit);
        in.memory.entries = { entry(9, "parent", "failed"), entry(5, "ancestor", "ok") };
        in.memory.entries[0].source
            = "// the broken kernel\nextern \"C\" int hone_run(const hone_args*) { return rowsum; }\n";
        in.attempt = 1;
        in.maxAttempts = 2;
        Prompt p = builder.repair(in);
        QCOMPARE(p.kind, std::string("repair"));
        QVERIFY2(
            p.user.find("The kernel below failed (compile_error). Fix it: this is repair attempt 1 of\n2.")
                != std::string::npos,
            p.user.c_str());
        QVERIFY(p.user.find("'rowsum' was not declared in this scope") != std::string::npos);
        QVERIFY(p.user.find("```cpp\n// the broken kernel") != std::string::npos);
        QVERIFY(p.user.find("## #5 (ancestor)") != std::string::npos);

        // A rejected reply has no code: the repair shows what the model said.
        in.memory.entries[0].source.clear();
        in.memory.entries[0].reply = "I would not change anything.";
        in.memory.entries[0].failureKind = "bad_candidate";
        p = builder.repair(in);
        QVERIFY(p.user.find("Your reply was rejected before it could be compiled") != std::string::npos);
        QVERIFY(p.user.find("I would not change anything.") != std::string::npos);
    }

    void templatesCanBeEditedAndAreChecked()
    {
        QTemporaryDir dir;
        std::filesystem::path d = dir.path().toStdString();
        write(d / "propose.md", "Edited. {{problem}}\n{{#hints}}HINTS: {{hints}}{{/hints}}\n");
        PromptTemplates t = PromptTemplates::load(d);
        QCOMPARE(t.origin, d.string());
        QCOMPARE(t.system, PromptTemplates::builtin().system); // missing files fall back
        ProblemSpec spec = softmax();
        Prompt p = PromptBuilder(t).propose(inputs(spec, MemoryOperator::Inherit));
        QVERIFY(p.user.starts_with("Edited. Name: softmax"));
        QVERIFY(p.user.find("HINTS: - Rows are long") != std::string::npos);

        write(d / "repair.md", "ok line\n{{failure}}\nthird {{nonsense}} line\n");
        try {
            PromptTemplates::load(d);
            QFAIL("an unknown placeholder must be refused");
        } catch (const PromptError& e) {
            QVERIFY2(QString(e.what()).contains(QString::fromStdString((d / "repair.md").string())
                         + ":3: unknown placeholder '{{nonsense}}'; known names:"),
                e.what());
        }
        write(d / "repair.md", "{{#hints}} never closed\n");
        try {
            PromptTemplates::load(d);
            QFAIL("an unclosed section must be refused");
        } catch (const PromptError& e) {
            QVERIFY2(QString(e.what()).contains("repair.md:1: '{{#hints}}' is never closed"), e.what());
        }
        // A placeholder of repair.md is not one of propose.md.
        write(d / "repair.md", "{{failure}}");
        write(d / "propose.md", "{{failure}}");
        QVERIFY_EXCEPTION_THROWN(PromptTemplates::load(d), PromptError);
        QVERIFY_EXCEPTION_THROWN(PromptTemplates::load(d / "missing"), PromptError);
    }

    void templateSections()
    {
        std::map<std::string, std::string> v { { "a", "A" }, { "b", "" }, { "c", "C" } };
        QCOMPARE(renderTemplate("x{{a}}y{{#b}}hidden {{c}}{{/b}}z{{#a}}[{{#c}}{{c}}{{/c}}]{{/a}}", v, "t"),
            std::string("xAyz[C]"));
        QCOMPARE(renderTemplate("one\n{{#b}}\ngone\n{{/b}}\n\n\n\ntwo", v, "t"), std::string("one\n\ntwo"));
        QVERIFY_EXCEPTION_THROWN(renderTemplate("{{/a}}", v, "t"), PromptError);
        QVERIFY_EXCEPTION_THROWN(renderTemplate("{{a", v, "t"), PromptError);
    }

    void feedbackFromAWorkerResult()
    {
        nlohmann::json result = nlohmann::json::parse(R"({"status":"failed",
            "failure":{"kind":"wrong_result","stage":"check","message":"small[1] seed 2: 33 of 231 elements differ"},
            "compile":{"ok":true,"messages":[{"line":12,"column":5,"severity":"warning","text":"unused variable 'k'"}]},
            "checks":[{"shape":"small[0]","seed":1,"ok":true},
                      {"shape":"small[1]","seed":2,"ok":false,"max_abs_err":0.5,"max_rel_err":0.25,"mismatches":33,
                       "first_mismatches":[{"output":"y","index":3,"got":0.1,"want":0.2},
                                           {"output":"y","index":4,"unwritten":true}]}]})");
        std::string f = renderFeedback(protocol::EvalResult::fromJson(result));
        QVERIFY2(f.find("wrong_result in stage check: small[1] seed 2: 33 of 231 elements differ")
                != std::string::npos,
            f.c_str());
        QVERIFY2(f.find("line 12:5: warning: unused variable 'k'") != std::string::npos, f.c_str());
        QVERIFY2(f.find("check small[1] seed 2: max abs err 0.5, max rel err 0.25, 33 mismatches; first: "
                        "y[3] got 0.1 want 0.2; y[4] never written;")
                != std::string::npos,
            f.c_str());
        QVERIFY(f.find("small[0]") == std::string::npos); // passing checks are not noise
        QCOMPARE(renderFeedback(protocol::EvalResult::fromJson({ { "status", "ok" } })), std::string());
        QVERIFY(renderFeedback(protocol::EvalResult::fromJson(result), 40).find("more characters cut") != std::string::npos);
    }
};

QTEST_GUILESS_MAIN(TestLlmPrompt)
#include "tst_llm_prompt.moc"
