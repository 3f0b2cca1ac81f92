// Shell rendering through real bash (docs/reference/templates.md, "Templates in bash commands",
// "The context in the environment"): whatever a value holds and wherever its reference sits, bash
// receives the exact bytes and never runs any part of them.
#include <catch2/catch.hpp>

#include "process/supervisor.hpp"
#include "process_checks.hpp"
#include "run_sync.hpp"
#include "shell/context_export.hpp"
#include "shell/shell_render.hpp"
#include "executor/shell_exports.hpp"
#include "executor/step_environment.hpp"
#include "files/temp_file.hpp"

#include <boost/json/parse.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <random>

using namespace std::chrono_literals;
using arun::test::leftover_processes;
namespace engine = arun::engine;
namespace fs = std::filesystem;

namespace {

// A private directory for one test's files; the script sees it as $D.
struct scratch_dir {
  fs::path path;
  scratch_dir() {
    static int counter = 0;
    path = fs::temp_directory_path() / ("arun-shell-test-" + std::to_string(::getpid()) + "-" + std::to_string(++counter));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~scratch_dir() { fs::remove_all(path); }
  std::string read(const std::string& name) const {
    std::ifstream in(path / name, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }
};

struct bash_run {
  arun::io::process_result result;
  std::vector<std::string> warnings;
  std::vector<std::string> temp_files;  // the by-file values, removed when the run is over
};

// What a bash step does: render, plan the exports, write by-file values, run, clean up.
bash_run run_rendered(const std::string& command, const boost::json::object& context, const scratch_dir& dir,
                      const std::string& extra = {}) {
  const auto rendered = engine::render_shell(command, {context});
  REQUIRE(rendered.error.empty());
  auto plan = engine::plan_shell_exports(context, rendered.variables);
  std::vector<arun::io::shell_export> vars;
  for (auto& v : plan.variables) vars.push_back({std::move(v.name), std::move(v.value), v.by_file});
  bash_run run;
  run.warnings = std::move(plan.warnings);
  arun::io::shell_exports exports(vars, "arun-var-test-");
  run.temp_files = exports.file_paths();
  auto env = exports.environment();
  env.emplace_back("D", dir.path.string());
  std::string paths;
  for (const auto& f : run.temp_files) paths += f + " ";
  env.emplace_back("ARUN_TEST_VALUE_FILES", paths);
  const auto body = exports.wrap(rendered.script) + extra;
  std::unique_ptr<arun::io::private_temp_file> body_file;
  arun::io::process_spec spec;
  if (body.size() > 64 * 1024) {  // as the step runner does: argv strings are limited to 128 KiB
    body_file = std::make_unique<arun::io::private_temp_file>("arun-body-test-", body);
    spec.launch.argv = {"/bin/bash", body_file->path()};
  } else {
    spec.launch.argv = {"/bin/bash", "-c", body};
  }
  spec.launch.env = arun::io::build_step_environment(arun::io::current_environment(), env);
  spec.timeout = 60s;
  run.result = arun::test::run_sync(arun::io::run_process(std::move(spec)));
  return run;
}

// Every position of the table in docs/reference/templates.md, "Templates in bash commands", each
// writing what bash received to its own file.
const std::string positions_script = R"~(set -u
printf '%s' {{v}} > "$D/unquoted"
printf '%s' "{{v}}" > "$D/double"
printf '%s' '{{v}}' > "$D/single"
printf '%s' $'{{v}}' > "$D/ansi_c"
printf '%s' a{{v}}b "a{{v}}b" 'a{{v}}b' $'a{{v}}b' > "$D/joined"
cat > "$D/heredoc" <<EOF
{{v}}
EOF
cat > "$D/quoted_heredoc" <<'EOF'
{{v}}
EOF
	cat > "$D/tab_heredoc" <<-EOF
	{{v}}
	EOF
cat > "$D/two_1" <<A; cat > "$D/two_2" <<"B"
{{v}}
A
{{v}}
B
: `printf '%s' {{v}} > "$D/backticks"`
: "`printf '%s' '{{v}}' > "$D/backticks_quoted"`"
: $(printf '%s' "{{v}}" > "$D/subst")
: "$(printf '%s' '{{v}}' "{{v}}" {{v}} > "$D/subst_nested")"
printf '%s' "${ARUN_UNSET_X:-{{v}}}" > "$D/param_default"
printf '%s' ${ARUN_UNSET_X:-{{v}}} > "$D/param_unquoted"
x={{v}}; printf '%s' "$x" > "$D/assign"
cat <<< {{v}} > "$D/herestring"
for item in {{v}}; do printf '%s' "$item" >> "$D/one_word"; done
printf '%s' {{v}} > /dev/null # the comment keeps {{v}} as written
)~";

// The value each position's file must hold.
std::vector<std::pair<std::string, std::string>> expected_files(const std::string& v) {
  const auto ab = "a" + v + "b";
  std::vector<std::pair<std::string, std::string>> files = {
      {"unquoted", v}, {"double", v}, {"single", v}, {"ansi_c", v}, {"joined", ab + ab + ab + ab},
      {"heredoc", v + "\n"}, {"quoted_heredoc", v + "\n"}, {"tab_heredoc", v + "\n"}, {"two_1", v + "\n"},
      {"two_2", v + "\n"}, {"backticks", v}, {"backticks_quoted", v}, {"subst", v}, {"subst_nested", v + v + v},
      {"param_default", v}, {"param_unquoted", v}, {"assign", v}, {"herestring", v + "\n"}};
  // `for` runs once with the value (an empty value is still one word).
  files.emplace_back("one_word", v);
  return files;
}

std::string all_bytes() {
  std::string s;
  for (int c = 1; c < 256; ++c) s += static_cast<char>(c);
  return s;
}

void check_positions(const std::string& value, const std::string& label) {
  INFO("value: " << label);
  const scratch_dir dir;
  boost::json::object ctx;
  ctx["v"] = value;
  const auto run = run_rendered(positions_script, ctx, dir);
  CHECK(run.result.exit_code == 0);
  CHECK(run.result.err.text == "");
  for (const auto& [file, expected] : expected_files(value)) {
    INFO("position: " << file);
    const auto got = dir.read(file);
    CHECK(got.size() == expected.size());
    CHECK(got == expected);
  }
  const auto files = std::distance(fs::directory_iterator(dir.path), fs::directory_iterator());
  CHECK(static_cast<std::size_t>(files) == expected_files(value).size());  // and nothing else
  for (const auto& f : run.temp_files) CHECK_FALSE(fs::exists(f));
}

}  // namespace

TEST_CASE("shell references deliver quotes, substitutions and backslashes byte-exact in every position") {
  const scratch_dir canary_dir;  // the values below name files in it; none may appear
  const auto c = (canary_dir.path / "PWNED").string();
  const std::vector<std::pair<std::string, std::string>> values = {
      {"it's a \"quoted\" 'value'", "quotes"},
      {"$(touch " + c + ") `touch " + c + "` ; touch " + c + " '; touch " + c + "; ' \"; touch " + c + "; \" ${HOME} $HOME",
       "substitutions"},
      {"back\\slash \\n \\' \\\" \\\\ \\$HOME \\`touch " + c + "\\` a[$(touch " + c + ")] * ? ~ [a] {a,b} !! %s", "backslashes"},
      {"line1\n\tline2 EOF\nEOF \n\n\n", "newlines"},
      {"", "empty"},
      {"-n", "dash"},
  };
  for (const auto& [value, label] : values) check_positions(value, label);
  CHECK(fs::is_empty(canary_dir.path));
  CHECK(leftover_processes().empty());
}

TEST_CASE("shell references deliver every byte 1..255 and a 1 MiB value byte-exact") {
  check_positions(all_bytes(), "bytes 1..255");
  check_positions(all_bytes() + "\n\n", "bytes 1..255 and trailing newlines");
  std::string big;
  while (big.size() < (1u << 20)) big += all_bytes();
  big += "\n";
  check_positions(big, "1 MiB by file");
  CHECK(leftover_processes().empty());
}

TEST_CASE("bash reads tricky heredocs, case patterns and parameter words as the lexer does") {
  const scratch_dir dir;
  const auto canary = (dir.path / "PWNED").string();
  const std::string v = "it's \"q\" $(touch " + canary + ") `touch " + canary + "` \\";
  boost::json::object ctx;
  ctx["v"] = v;
  ctx["v_copy"] = v + "z";
  const auto run = run_rendered(R"~(cat > "$D/a" <<$'EOF'
{{v}}
EOF
printf '%s' {{v}} > "$D/b"
cat > "$D/c" <<EOF
x \
EOF
{{v}}
EOF
printf '%s' "${ARUN_UNSET_X:-'{{v}}'}" > "$D/d"
printf '%s' "${RECIPE_VAR_v_copy#'{{v}}'}" > "$D/e"
case a in (a) printf '%s' '{{v}}' > "$D/f";; esac
printf '%s' "$(case a in a) printf '%s' '{{v}}' {{v}};; esac)" > "$D/g"
)~", ctx, dir);
  CHECK(run.result.exit_code == 0);
  CHECK(run.result.err.text == "");
  CHECK(dir.read("a") == v + "\n");
  CHECK(dir.read("b") == v);
  CHECK(dir.read("c") == "x EOF\n" + v + "\n");
  CHECK(dir.read("d") == "'" + v + "'");
  CHECK(dir.read("e") == "z");
  CHECK(dir.read("f") == v);
  CHECK(dir.read("g") == v + v);
  CHECK_FALSE(fs::exists(canary));
  CHECK(leftover_processes().empty());
}

TEST_CASE("by-file values are private, read byte-exact, not exported, and removed after the step") {
  const scratch_dir dir;
  boost::json::object ctx;
  std::string big(200 * 1024, 'x');
  big += "\x01\xe8\x01=\n\n";  // an invalid UTF-8 sequence before \x01 trips `read` outside LC_ALL=C
  ctx["big"] = big;
  ctx["unused_big"] = std::string(200 * 1024, 'u');
  const auto run = run_rendered(
      "printf '%s' \"{{big}}\" > \"$D/big\"\n"
      "env | grep -c '^RECIPE_VAR_big=' > \"$D/exported\"\n"
      "env | grep -c 'unused_big=' >> \"$D/exported\"\n",
      ctx, dir, "stat -c %a $ARUN_TEST_VALUE_FILES > \"$D/modes\"\n");
  CHECK(run.result.exit_code == 0);
  CHECK(dir.read("big") == big);
  CHECK(dir.read("exported") == "0\n0\n");
  CHECK(dir.read("modes") == "600\n");
  REQUIRE(run.temp_files.size() == 1);
  CHECK_FALSE(fs::exists(run.temp_files[0]));
  // The script's own {{big}} arrives by file; the context export leaves the large values out.
  REQUIRE(run.warnings.size() == 2);
  CHECK_THAT(run.warnings[0], Catch::StartsWith("context key 'big' (BIG) is larger"));
  CHECK_THAT(run.warnings[1], Catch::StartsWith("context key 'unused_big' (RECIPE_VAR_unused_big, UNUSED_BIG) is larger"));
  CHECK(leftover_processes().empty());
}

TEST_CASE("integer values work in arithmetic positions and other values never reach bash") {
  const scratch_dir dir;
  const auto ctx = boost::json::parse(R"~({"n": 41, "one": 1, "bad": "a[$(touch CANARY)]"})~").as_object();
  const auto run = run_rendered(
      "{ echo $(( {{n}} + 1 )); (( {{n}} == 41 )) && echo yes; let y={{n}}*2; echo $y; [[ {{n}} -eq 41 ]] && echo eq;\n"
      "a=(x y); echo ${a[{{one}}]}; for (( i = {{one}}; i < 3; i++ )); do echo i$i; done; } > \"$D/out\"\n",
      ctx, dir);
  CHECK(run.result.exit_code == 0);
  CHECK(dir.read("out") == "42\nyes\n82\neq\ny\ni1\ni2\n");
  for (const auto* command : {"(( {{bad}} ))", "echo $(( {{bad}} ))", "let x={{bad}}", "[[ 1 -eq {{bad}} ]]", "echo ${a[{{bad}}]}"}) {
    INFO(command);
    CHECK_THAT(engine::render_shell(command, {ctx}).error, Catch::Contains("arithmetic position"));
  }
  CHECK(leftover_processes().empty());
}

TEST_CASE("the context reaches bash as RECIPE_VAR_ variables and aliases, protected names untouched") {
  const scratch_dir dir;
  const auto ctx = boost::json::parse(R"~({
    "repo-path": "/src/repo", "obj": {"status": "ok\n"}, "path": "/evil", "ps4": "$(touch CANARY)", "ci": "false"
  })~").as_object();
  const auto run = run_rendered(
      "printf '%s|' \"$RECIPE_VAR_repo_path\" \"$REPO_PATH\" \"$RECIPE_VAR_obj__status\" \"$RECIPE_VAR_obj\" "
      "\"$RECIPE_VAR_path\" \"$CI\" \"$(printenv PS4 || echo no-PS4)\" > \"$D/out\"; [ \"$PATH\" != /evil ] && echo path-kept >> \"$D/out\"",
      ctx, dir);
  CHECK(run.result.exit_code == 0);
  CHECK(dir.read("out") == "/src/repo|/src/repo|ok\n|{\"status\":\"ok\\n\"}|/evil|true|no-PS4|path-kept\n");
  CHECK(leftover_processes().empty());
}

namespace {

// A command in which bash evaluates `{{x}}` as arithmetic, a variable name or code, with a
// value that works there and what the command then prints.
struct evaluated_position {
  const char* command;
  const char* good_value;
  const char* output;
};

// Every context found by probing bash 5.2 with the value `a[$(touch FILE)]` (and the listed
// relatives: nameref targets, integer attributes set later in the text, compound assignments).
const std::vector<evaluated_position> evaluated_positions = {
    // arithmetic: integer variables and indexed-array subscripts
    {"declare -i n={{x}}; echo $n", "7", "7\n"},
    {"f() { local -i n={{x}}; echo $n; }; f", "7", "7\n"},
    {"typeset -i n; n={{x}}; echo $n", "7", "7\n"},
    {"declare -i n; n+={{x}}; echo $n", "7", "7\n"},
    {"declare -il n=\"{{x}}\"; echo $n", "7", "7\n"},
    {"f() { n={{x}}; }; declare -i n; f; echo $n", "7", "7\n"},
    {"declare -i n; export n={{x}}; echo $n", "7", "7\n"},
    {"declare -ai a; a=({{x}}); echo ${a[0]}", "7", "7\n"},
    {"declare -ai a; a+=('{{x}}'); echo ${a[0]}", "7", "7\n"},
    {"declare -i n; read n <<< {{x}}; echo $n", "7", "7\n"},
    {"declare -i n; read n <<EOF\n{{x}}\nEOF\necho $n", "7", "7\n"},
    {"declare -i n; printf -v n %s \"{{x}}\"; echo $n", "7", "7\n"},
    {"declare -i n; mapfile n <<< {{x}}; echo $n", "7", "7\n"},
    {"RANDOM={{x}}; echo ok", "7", "ok\n"},
    {"OPTIND={{x}}; echo $OPTIND", "7", "7\n"},
    {"a+=([{{x}}]=1); echo ${!a[@]}", "7", "7\n"},
    {"a=([{{x}}]=1 [8]=2); echo ${!a[@]}", "7", "7 8\n"},
    {"declare -a a=([{{x}}]=v); echo ${!a[@]}", "7", "7\n"},
    {"declare \"a[{{x}}]=1\"; echo ${!a[@]}", "7", "7\n"},
    {"printf -v \"a[{{x}}]\" %s 1; echo ${!a[@]}", "7", "7\n"},
    {"read -r \"a[{{x}}]\" <<< v; echo ${!a[@]}", "7", "7\n"},
    {"a=(1 2); unset \"a[{{x}}]\"; echo ${#a[@]}", "1", "1\n"},
    {"a=(1 2); [[ -v a[{{x}}] ]] && echo set", "1", "set\n"},
    // variable names (a subscript in the value would run)
    {"declare -n r={{x}}; name1=v; echo $r", "name1", "v\n"},
    {"declare -n r; r={{x}}; name1=v; echo $r", "name1", "v\n"},
    {"printf -v {{x}} %s v; echo $name1", "name1", "v\n"},
    {"printf -v'{{x}}' %s v; echo $name1", "name1", "v\n"},
    {"read -r {{x}} <<< v; echo $name1", "name1", "v\n"},
    {"read -r -a {{x}} <<< v; echo ${name1[0]}", "name1", "v\n"},
    {"mapfile -t {{x}} <<< v; echo ${name1[0]}", "name1", "v\n"},
    {"readarray {{x}} < /dev/null; echo ok", "name1", "ok\n"},
    {"name1=1; unset {{x}}; echo ${name1-gone}", "name1", "gone\n"},
    {"declare {{x}}=v; echo $name1", "name1", "v\n"},
    {"export \"{{x}}=v\"; echo $name1", "name1", "v\n"},
    {"name1=; [[ -v {{x}} ]] && echo set", "name1", "set\n"},
    {"name1=; test -v {{x}} && echo set", "name1", "set\n"},
    {"name1=; [ -v \"{{x}}\" ] && echo set", "name1", "set\n"},
    {"getopts ab {{x}} -a; echo $name1", "name1", "a\n"},
    {"builtin read {{x}} <<< v; echo $name1", "name1", "v\n"},
};

// Code positions: a reference there is refused whatever its value, even a harmless word
// (docs/reference/templates.md, "Code positions"). Each ran the value as code before.
const std::vector<std::string> code_positions = {
    "eval \"echo {{x}}\"", "eval 'echo {{x}}'", "command eval echo {{x}}", "trap \"echo {{x}}\" EXIT",
    "trap -- 'echo {{x}}' EXIT", "bash -c \"echo {{x}}\"", "bash -e -o pipefail -c 'echo {{x}}'", "sh -c \"echo {{x}}\"",
    "/bin/bash -ec 'echo {{x}}'", "env A=1 bash -c 'echo {{x}}'", "timeout 20 bash -c 'echo {{x}}'",
    "flock \"$D/lock\" -c 'echo {{x}}'", "su root -s /bin/bash -c 'echo {{x}}'",
    "PS4='+{{x}} '; set -x; : 2>/dev/null; set +x; echo ok", "mapfile -C 'echo {{x}}' -c 1 a <<< l1",
    "shopt -s expand_aliases; alias e='echo {{x}}'\ne",
    // defect 10 of issue 33: wrappers the rewriter did not know
    "find \"$D\" -maxdepth 0 -exec sh -c 'echo {{x}}' \\;", "ionice -c3 sh -c 'echo {{x}}'", "taskset 1 sh -c 'echo {{x}}'",
    "unshare -r sh -c 'echo {{x}}'", "chroot / sh -c 'echo {{x}}'", "setpriv -- sh -c 'echo {{x}}'",
    "echo x | xargs sh -c 'echo {{x}}'", "parallel 'echo {{x}}' ::: a", "coproc sh -c 'echo {{x}}'; wait",
    "echo 'echo {{x}}' | sh", "sh <<< 'echo {{x}}'", "source <(echo 'echo {{x}}')", ". <(echo 'echo {{x}}')",
    "bash <<EOF\necho {{x}}\nEOF", "bash <<'EOF'\necho {{x}}\nEOF", "python3 -c 'print(\"{{x}}\")'",
    "perl -e 'print \"{{x}}\\n\"'", "awk 'BEGIN { print \"{{x}}\" }'", "node -e 'console.log(\"{{x}}\")'",
    "ruby -e 'puts \"{{x}}\"'", "sed 's/^/{{x}}/' <<< ''", "echo {{x}} | xargs -I{} sh -c 'echo {}'",
    "bash -c \"$(printf 'echo %s' {{x}})\"", "\"$BASH\" -c 'echo {{x}}'", "env -S 'echo {{x}}'",
    // the second review of issue 33: words bash expands into a shell, input appended as code,
    // scripts on other descriptors, a shell reading output, options spelt otherwise, variables
    "{sh,-c,'echo {{x}}'}", "/bin/[s]h -c 'echo {{x}}'", "$'\\x73h' -c 'echo {{x}}'", "cmd=(sh -c); \"${cmd[@]}\" 'echo {{x}}'",
    "set -- sh -c; \"$@\" 'echo {{x}}'", "echo 'echo {{x}}' | xargs -0 sh -c", "parallel sh -c ::: 'echo {{x}}'",
    "bash /dev/fd/3 3<<< 'echo {{x}}'", "exec 3<<< 'echo {{x}}'; bash /dev/fd/3", "echo 'echo {{x}}' > >(sh)",
    "{ sh; } <<< 'echo {{x}}'", "env -iS 'echo {{x}}'", "env --split='echo {{x}}'", "sed --e='s/^/{{x}}/' <<< ''",
    "gawk --sourc='BEGIN { print \"{{x}}\" }'", "BASH_ENV='$(echo {{x}})' bash -c :", "env 'BASH_FUNC_f%%=() { echo {{x}}; }' bash -c f",
    "ed -s /dev/null <<< '!echo {{x}}'", "echo 'syscmd(echo {{x}})' | m4", "coproc sh; echo 'echo {{x}}' >&\"${COPROC[1]}\"",
    // the third review: long options, subshells and functions reading stdin, descriptors, builtins setting code variables
    "su --command='echo {{x}}'", "flock \"$D/lock\" --command 'echo {{x}}'", "echo 'echo {{x}}' | ( sh )",
    "f() { sh; }; f <<< 'echo {{x}}'", "sh 3<<< 'echo {{x}}' <&3", "exec 0<<< 'echo {{x}}'; sh", "bash //dev/stdin <<< 'echo {{x}}'",
    ". -- /dev/stdin <<< 'echo {{x}}'", "bash --rcfile /dev/null <<< 'echo {{x}}'", "env -S'sh -c' 'echo {{x}}'",
    "echo 'echo {{x}}' | eval \"$(cat)\"", "printf -v PS4 %s '+{{x}} '; set -x; :; set +x", "read -r PS4 <<< '{{x}}'",
    "python3 -m timeit 'print(\"{{x}}\")'", "perl -M'strict;print \"{{x}}\"' -e 1", "git -c core.sshCommand='{{x}}' ls-remote ssh://h/x",
    "ssh -o ProxyCommand='{{x}}' h", "unshare -U <<< 'echo {{x}}'", "docker run --entrypoint sh img -c 'echo {{x}}'",
    // the fourth review
    "python3 -c \\\n 'print(\"{{x}}\")'", "sh \\\n -c 'echo {{x}}'", "perl -I lib -e 'print \"{{x}}\\n\"'",
    "bash -c 'cd /tmp && bash -s' <<< 'echo {{x}}'", "echo 'echo {{x}}' | { out=$(bash); echo \"$out\"; }",
    "declare -a arr='({{x}})'", "make -f /dev/null VERSION='{{x}}'", "exec 4<<< 'echo {{x}}'; exec 0<&4; sh",
    "run() { bash \"$@\"; }; run <<< 'echo {{x}}'", "shopt -s expand_aliases; alias run='bash -c'\nrun 'echo {{x}}'",
    "compgen -W '{{x}}' x",
};

// The same code, each value passed as data: it runs, and the value arrives intact.
const std::vector<std::string> code_with_data = {
    "eval 'echo \"$RECIPE_VAR_x\"'",
    "bash -c 'echo \"$1\"' _ {{x}}",
    "find \"$D\" -maxdepth 0 -exec sh -c 'echo \"$1\"' _ {{x}} \\;",
    "ionice -c3 sh -c 'echo \"$RECIPE_VAR_x\"'",
    "printf '%s\\n' {{x}} | sh -c 'cat'",
    "python3 -c 'import sys; print(sys.argv[1])' {{x}}",
    "python3 -c 'import os; print(os.environ[\"RECIPE_VAR_x\"])'",
    "perl -e 'print \"$ARGV[0]\\n\"' {{x}}",
    "awk 'BEGIN { print ENVIRON[\"RECIPE_VAR_x\"] }'",
    "sed --sandbox \"s|^|{{x}}|\" <<< ''",
};

// Positions that look alike but where bash only ever receives the value as data.
const std::vector<std::string> data_positions = {
    "echo {{x}}",
    "declare -A m; m[{{x}}]=1; echo \"${!m[@]}\"",
    "declare -A m=([{{x}}]=1); echo \"${!m[@]}\"",
    "bash -c 'printf %s \"$1\"' _ {{x}}; echo",
    "read -r line <<< {{x}}; echo \"$line\"",
    "printf -v out %s {{x}}; echo \"$out\"",
    "x={{x}}; echo \"$x\"",
    "f() { local y={{x}}; echo \"$y\"; }; f",
    "declare y={{x}}; echo \"$y\"",
    "export Y={{x}}; echo \"$Y\"",
    "echo {{x}} 2>/dev/null",
    "trap - EXIT; echo {{x}}",
    "command echo {{x}}",
};

}  // namespace

TEST_CASE("a reference in code is refused whatever its value, passed as data, the value runs as data") {
  const scratch_dir dir;
  const auto canary = (dir.path / "PWNED").string();
  for (const auto& command : code_positions) {
    INFO("command: " << command);
    for (const std::string& value : std::vector<std::string>{"hello", "x; touch " + canary, "$(touch " + canary + ")"}) {
      boost::json::object ctx;
      ctx["x"] = value;
      CHECK_THAT(engine::render_shell(command, {ctx}).error, Catch::Contains("is in code that"));
    }
  }
  const bool have_tools = ::access("/usr/bin/python3", X_OK) == 0 && ::access("/usr/bin/perl", X_OK) == 0;
  for (const auto& command : code_with_data) {
    if (!have_tools && (command.find("python3") != std::string::npos || command.find("perl") != std::string::npos)) continue;
    INFO("command: " << command);
    for (const std::string& value : std::vector<std::string>{"hello", "x; touch " + canary + " #", "$(touch " + canary + ")", "`touch " + canary + "`"}) {
      if (command.find("sed") != std::string::npos && value.find('|') != std::string::npos) continue;
      INFO("value: " << value);
      boost::json::object ctx;
      ctx["x"] = value;
      const auto run = run_rendered(command, ctx, dir);
      CHECK(run.result.exit_code == 0);
      CHECK(run.result.out.text == value + "\n");
    }
  }
  CHECK_FALSE(fs::exists(canary));
  CHECK(leftover_processes().empty());
}

TEST_CASE("values in arithmetic and variable-name positions are refused unless bash cannot run them") {
  const scratch_dir dir;
  const auto canary = (dir.path / "PWNED").string();
  const std::vector<std::string> hostile = {"a[$(touch " + canary + ")]", "$(touch " + canary + ")",
                                            "x; touch " + canary, "`touch " + canary + "`"};
  for (const auto& p : evaluated_positions) {
    INFO("command: " << p.command);
    for (const auto& value : hostile) {
      INFO("value: " << value);
      boost::json::object ctx;
      ctx["x"] = value;
      const auto rendered = engine::render_shell(p.command, {ctx});
      CHECK_THAT(rendered.error, Catch::Contains("position") || Catch::Contains("runs as code"));
    }
    boost::json::object ctx;
    ctx["x"] = p.good_value;
    const auto run = run_rendered(p.command, ctx, dir);
    CHECK(run.result.exit_code == 0);
    CHECK(run.result.out.text == p.output);
  }
  for (const auto& command : data_positions) {
    INFO("command: " << command);
    for (const auto& value : hostile) {
      INFO("value: " << value);
      boost::json::object ctx;
      ctx["x"] = value;
      const auto run = run_rendered(command, ctx, dir);
      CHECK(run.result.exit_code == 0);
      CHECK(run.result.out.text == value + "\n");
    }
  }
  CHECK_FALSE(fs::exists(canary));
  CHECK(leftover_processes().empty());
}

TEST_CASE("a context key named like a program's setting never configures it: git runs no injected fsmonitor") {
  const scratch_dir dir;
  const auto canary = (dir.path / "PWNED").string();
  boost::json::object ctx;
  ctx["git_config_parameters"] = "'core.fsmonitor'='touch " + canary + "'";
  ctx["git_dir"] = (dir.path / "elsewhere").string();
  const auto run = run_rendered(
      "cd \"$D\" && git init -q repo && cd repo && git status --porcelain > /dev/null && "
      "{ printenv GIT_CONFIG_PARAMETERS GIT_DIR || true; } > \"$D/git_vars\"",
      ctx, dir);
  CHECK(run.result.exit_code == 0);
  CHECK(dir.read("git_vars") == "");
  CHECK_FALSE(fs::exists(canary));
  CHECK(leftover_processes().empty());
}

TEST_CASE("random compositions of commands, wrappers and quoting never run a value that arun accepted") {
  const scratch_dir dir;
  const auto canary = (dir.path / "PWNED").string();
  // {Q} is the reference in one of four quotings; the statements cover the evaluated positions
  // above, their data look-alikes, and the ways a command can be reached.
  const std::vector<std::string> statements = {
      "declare -i n={Q}", "n={Q}", "declare -i n", "local -i k={Q}", "a[{Q}]=1", "a+=([{Q}]=1)", "a=({Q})",
      "declare -A m", "m[{Q}]=1", "read -r {Q} <<< v", "read n <<< {Q}", "printf -v {Q} %s v", "printf -v n %s {Q}",
      "printf -v 'a[{Q}]' x", "unset {Q}", "[[ -v {Q} ]]", "test -v {Q}", "declare -n r={Q}", "r={Q}",
      "export {Q}=1", "eval echo {Q}", "trap 'echo {Q}' EXIT", "bash -c 'echo {Q}'", "echo $(( {Q} ))",
      "sh -c 'echo \"$1\"' _ {Q}", "echo {Q} | sh", "sh <<< {Q}", "source <(echo {Q})", "python3 -c 'print(1)' {Q}",
      "find \"$D\" -maxdepth 0 -exec sh -c {Q} \\;", "echo {Q} | xargs -I{} sh -c 'echo {}'", "printf %s {Q} | sh -c cat",
      "perl -e {Q}", "awk {Q} /dev/null", "env -S {Q}", "ionice -c3 sh -c {Q}",
      "(( {Q} ))", "let n={Q}", "[[ {Q} -eq 1 ]]", "echo ${a[{Q}]}", "echo ${s:{Q}}", "mapfile -t {Q} < /dev/null",
      "getopts ab {Q}", "echo {Q}", "cat <<< {Q}", "x={Q}", "PS4={Q}", "RANDOM={Q}", "OPTIND={Q}"};
  const std::vector<std::pair<std::string, std::string>> frames = {
      {"", ""}, {"command ", ""}, {"builtin ", ""}, {"env ", ""}, {"f() { ", "; }; f"}, {"function g { ", "; }; g"},
      {"if ", "; then :; fi"}, {"( ", " )"}, {": $( ", " )"}, {"{ ", "; }"}, {"true && ", ""}, {"x=1 ", ""},
      {"time ", ""}, {"! ", ""}, {"timeout 5 ", ""}, {"nohup ", " 2>/dev/null"}};
  const std::vector<std::string> quotings = {"{{x}}", "\"{{x}}\"", "'{{x}}'", "$'{{x}}'"};
  std::mt19937 random(20261123);
  const auto pick = [&](const auto& list) -> const auto& { return list[random() % list.size()]; };
  const std::vector<std::string> hostile = {"a[$(touch " + canary + ")]", "$(touch " + canary + ")"};
  int accepted = 0;
  for (int trial = 0; trial < 600; ++trial) {
    std::string script = "set +e\n";
    for (int k = 0, n = 1 + static_cast<int>(random() % 2); k < n; ++k) {
      auto statement = pick(statements);
      for (std::size_t at; (at = statement.find("{Q}")) != std::string::npos;) statement.replace(at, 3, pick(quotings));
      const auto& [open, close] = pick(frames);
      script += open + statement + close + (random() % 2 ? "\n" : "; ");
    }
    for (const auto& value : hostile) {
      INFO("script: " << script << "\nvalue: " << value);
      boost::json::object ctx;
      ctx["x"] = value;
      if (!engine::render_shell(script, {ctx}).ok()) continue;
      ++accepted;
      const auto run = run_rendered(script, ctx, dir);
      CHECK(run.result.launched());
      REQUIRE_FALSE(fs::exists(canary));
    }
  }
  CHECK(accepted > 50);  // the data positions are accepted and did run
  CHECK(leftover_processes().empty());
}
