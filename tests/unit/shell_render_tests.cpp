// Templates in shell commands (docs/reference/templates.md, "Templates in bash commands"): the
// rewrite for every lexical position, nesting, heredocs, comments, arithmetic and the errors that
// stop a step before it runs.
#include <catch2/catch.hpp>

#include "shell/shell_lexer.hpp"
#include "shell/shell_render.hpp"

#include <boost/json/parse.hpp>

using namespace arun::engine;

namespace {

const boost::json::object& context() {
  static const auto ctx = boost::json::parse(R"({
    "x": "val", "n": 42, "neg": -7, "plus": "+3", "flt": 1.5, "nothing": null, "empty": "",
    "obj": {"status": "ok"}, "list": [10, 20], "dash-name": "d", "a-b": "dash", "a_b": "under",
    "eof": "line\nEOF\nmore", "tab_eof": "x\n\t\tEOF", "ends": "EO", "nul": "a\u0000b", "expr": "1+1",
    "tabbed": "a\n\tb", "lead_tab": "\tt"
  })").as_object();
  return ctx;
}

std::string render(std::string_view command, undefined_mode mode = undefined_mode::normal,
                   const name_set* declared = nullptr) {
  const auto r = render_shell(command, {context(), declared, mode});
  return r.ok() ? r.script : "ERROR: " + r.error;
}

struct row {
  std::string command;
  std::string expected;
};

void check_rows(const std::vector<row>& rows) {
  for (const auto& r : rows) {
    INFO("command: " << r.command);
    CHECK(render(r.command) == r.expected);
  }
}

}  // namespace

TEST_CASE("shell references are rewritten for each quoting position") {
  check_rows({
      {"echo {{x}}", R"(echo "${RECIPE_VAR_x}")"},
      {"echo a{{x}}b", R"(echo a"${RECIPE_VAR_x}"b)"},
      {"echo {{ x }}", R"(echo "${RECIPE_VAR_x}")"},
      {R"(echo "a {{x}} b")", R"(echo "a ${RECIPE_VAR_x} b")"},
      {"echo 'a {{x}} b'", R"(echo 'a '"${RECIPE_VAR_x}"' b')"},
      {R"(echo $'a\n{{x}}')", R"(echo $'a\n'"${RECIPE_VAR_x}"$'')"},
      {R"(echo $'it\'s {{x}}')", R"(echo $'it\'s '"${RECIPE_VAR_x}"$'')"},
      {R"(echo "$'{{x}}'")", R"(echo "$'${RECIPE_VAR_x}'")"},
      {R"(echo "it's {{x}}")", R"(echo "it's ${RECIPE_VAR_x}")"},
      {R"(echo 'say "{{x}}"')", R"(echo 'say "'"${RECIPE_VAR_x}"'"')"},
      {R"(echo "a \"{{x}}\" b")", R"(echo "a \"${RECIPE_VAR_x}\" b")"},
      {R"(echo \"{{x}})", R"(echo \""${RECIPE_VAR_x}")"},
      {R"(echo '\{{x}}')", R"(echo '\'"${RECIPE_VAR_x}"'')"},
      {"echo '${{x}}'", R"(echo '$'"${RECIPE_VAR_x}"'')"},
      {"x={{x}} cmd", R"(x="${RECIPE_VAR_x}" cmd)"},
      {"for f in {{x}}; do :; done", R"(for f in "${RECIPE_VAR_x}"; do :; done)"},
      {"cat <<< {{x}}", R"(cat <<< "${RECIPE_VAR_x}")"},
      {"echo ${v:-{{x}}}", R"(echo ${v:-"${RECIPE_VAR_x}"})"},
      {R"(echo "${v:-{{x}}}")", R"(echo "${v:-${RECIPE_VAR_x}}")"},
      {"echo ${v:-'{{x}}'}", R"(echo ${v:-''"${RECIPE_VAR_x}"''})"},
      // In "${…}", '…' quotes only in patterns; elsewhere its quotes stay and `$` expands.
      {R"(echo "${v:-'{{x}}'}")", R"(echo "${v:-'${RECIPE_VAR_x}'}")"},
      {R"(echo "${v#'{{x}}'}" "${v/'{{x}}'/'{{x}}'}")",
       R"(echo "${v#''"${RECIPE_VAR_x}"''}" "${v/''"${RECIPE_VAR_x}"''/''"${RECIPE_VAR_x}"''}")"},
      {"echo \"${v:-'}'}\" {{x}}", R"(echo "${v:-'}'}" "${RECIPE_VAR_x}")"},
      {"cat <<EOF\n${v:-'{{x}}'} ${v%'{{x}}'}\nEOF", "cat <<EOF\n${v:-'${RECIPE_VAR_x}'} ${v%''\"${RECIPE_VAR_x}\"''}\nEOF"},
      {"echo ${v/a/{{x}}}", R"(echo ${v/a/"${RECIPE_VAR_x}"})"},
      {"echo {{x}}\necho '{{x}}'", "echo \"${RECIPE_VAR_x}\"\necho ''\"${RECIPE_VAR_x}\"''"},
  });
}

TEST_CASE("shell references inside command substitutions follow their own quoting") {
  check_rows({
      {"echo `echo {{x}}`", R"(echo `echo "${RECIPE_VAR_x}"`)"},
      {"echo \"`echo '{{x}}' {{x}}`\"", R"(echo "`echo ''"${RECIPE_VAR_x}"'' "${RECIPE_VAR_x}"`")"},
      {"echo $(echo {{x}})", R"(echo $(echo "${RECIPE_VAR_x}"))"},
      {R"~(echo "$(echo "{{x}}" '{{x}}' {{x}})")~",
       R"~(echo "$(echo "${RECIPE_VAR_x}" ''"${RECIPE_VAR_x}"'' "${RECIPE_VAR_x}")")~"},
      {R"~(echo "a $(echo "b $(echo '{{x}}')") {{x}}")~",
       R"~(echo "a $(echo "b $(echo ''"${RECIPE_VAR_x}"'')") ${RECIPE_VAR_x}")~"},
      {R"(echo '$(echo {{x}})')", R"(echo '$(echo '"${RECIPE_VAR_x}"')')"},
      {"diff <(echo {{x}}) <(echo '{{x}}')", R"(diff <(echo "${RECIPE_VAR_x}") <(echo ''"${RECIPE_VAR_x}"''))"},
      {"echo $( (cd /; echo {{x}}) ) '{{x}}'", R"(echo $( (cd /; echo "${RECIPE_VAR_x}") ) ''"${RECIPE_VAR_x}"'')"},
      {"echo \"$(case a in a) echo '{{x}}';; esac)\" '{{x}}'",
       R"~(echo "$(case a in a) echo ''"${RECIPE_VAR_x}"'';; esac)" ''"${RECIPE_VAR_x}"'')~"},
      {"echo $(case a in (a|b) echo {{x}};; *) :;; esac) '{{x}}'",
       R"(echo $(case a in (a|b) echo "${RECIPE_VAR_x}";; *) :;; esac) ''"${RECIPE_VAR_x}"'')"},
  });
}

TEST_CASE("shell references in heredoc bodies are expanded or inlined by the delimiter's quoting") {
  check_rows({
      {"cat <<EOF\n{{x}} '{{x}}' \"{{x}}\"\nEOF\necho {{x}}",
       "cat <<EOF\n${RECIPE_VAR_x} '${RECIPE_VAR_x}' \"${RECIPE_VAR_x}\"\nEOF\necho \"${RECIPE_VAR_x}\""},
      {"cat <<'EOF'\n{{x}} '{{x}}'\nEOF\necho {{x}}", "cat <<'EOF'\nval 'val'\nEOF\necho \"${RECIPE_VAR_x}\""},
      {"cat <<\"EOF\"\n{{x}}\nEOF", "cat <<\"EOF\"\nval\nEOF"},
      {"cat <<\\EOF\n{{x}}\nEOF", "cat <<\\EOF\nval\nEOF"},
      {"cat <<E\"O\"F\n{{x}}\nEOF", "cat <<E\"O\"F\nval\nEOF"},
      {"cat << 'EOF'\n{{x}}\nEOF", "cat << 'EOF'\nval\nEOF"},
      // bash drops the `$` of $'…' and $"…" delimiters: the body ends at "EOF", not "$EOF".
      {"cat <<$'EOF'\n{{x}}\nEOF\necho {{x}}\n$EOF", "cat <<$'EOF'\nval\nEOF\necho \"${RECIPE_VAR_x}\"\n$EOF"},
      {"cat <<$\"EOF\"\n{{x}}\nEOF\necho {{x}}", "cat <<$\"EOF\"\nval\nEOF\necho \"${RECIPE_VAR_x}\""},
      {"cat <<E\\\nOF\n{{x}}\nEOF\necho {{x}}", "cat <<E\\\nOF\n${RECIPE_VAR_x}\nEOF\necho \"${RECIPE_VAR_x}\""},
      // In unquoted bodies a trailing backslash joins lines: "E\\\nOF" ends the body, "x \\\nEOF" does not.
      {"cat <<EOF\nE\\\nOF\necho {{x}}\nEOF", "cat <<EOF\nE\\\nOF\necho \"${RECIPE_VAR_x}\"\nEOF"},
      {"cat <<EOF\nx \\\nEOF\n{{x}}\nEOF\necho {{x}}", "cat <<EOF\nx \\\nEOF\n${RECIPE_VAR_x}\nEOF\necho \"${RECIPE_VAR_x}\""},
      {"cat <<EOF\nx \\\\\nEOF\necho {{x}}", "cat <<EOF\nx \\\\\nEOF\necho \"${RECIPE_VAR_x}\""},
      {"cat <<'EOF'\nx \\\nEOF\necho {{x}}", "cat <<'EOF'\nx \\\nEOF\necho \"${RECIPE_VAR_x}\""},
      {"cat <<-'EOF'\n\t{{x}}\n\tEOF\necho {{x}}", "cat <<-'EOF'\n\tval\n\tEOF\necho \"${RECIPE_VAR_x}\""},
      {"cat <<-'EOF'\nx{{lead_tab}}\nEOF", "cat <<-'EOF'\nx\tt\nEOF"},
      {"cat <<-EOF\n{{tabbed}}\nEOF", "cat <<-EOF\n${RECIPE_VAR_tabbed}\nEOF"},
      {"cat <<-EOF\n\t{{x}}\n\t\tEOF\necho '{{x}}'", "cat <<-EOF\n\t${RECIPE_VAR_x}\n\t\tEOF\necho ''\"${RECIPE_VAR_x}\"''"},
      {"cat <<EOF\n EOF\n{{x}}\nEOF", "cat <<EOF\n EOF\n${RECIPE_VAR_x}\nEOF"},
      {"cat <<A <<'B'; echo {{x}}\n{{x}}\nA\n{{x}}\nB\necho {{x}}",
       "cat <<A <<'B'; echo \"${RECIPE_VAR_x}\"\n${RECIPE_VAR_x}\nA\nval\nB\necho \"${RECIPE_VAR_x}\""},
      {"cat <<A; cat <<'B'\n{{x}}\nA\n{{x}}\nB", "cat <<A; cat <<'B'\n${RECIPE_VAR_x}\nA\nval\nB"},
      {"cat <<EOF | grep {{x}}\n{{x}}\nEOF", "cat <<EOF | grep \"${RECIPE_VAR_x}\"\n${RECIPE_VAR_x}\nEOF"},
      {"cat <<EOF\n$(echo '{{x}}' \"{{x}}\")\nEOF", "cat <<EOF\n$(echo ''\"${RECIPE_VAR_x}\"'' \"${RECIPE_VAR_x}\")\nEOF"},
      {"x=$(cat <<'EOF'\n{{x}}\nEOF\n)\necho {{x}}", "x=$(cat <<'EOF'\nval\nEOF\n)\necho \"${RECIPE_VAR_x}\""},
      {"cat <<'EOF'\n{{x}}", "cat <<'EOF'\nval"},
      {"cat <<'EOF'\n$(echo {{x}})\nEOF", "cat <<'EOF'\n$(echo val)\nEOF"},
      {"cat <<'EOF'\n{{ends}}X\nEOF", "cat <<'EOF'\nEOX\nEOF"},
      {"cat <<EOF\n{{eof}}\nEOF", "cat <<EOF\n${RECIPE_VAR_eof}\nEOF"},
      // Not heredocs: a here-string, a shift, quoted or commented `<<`.
      {"cat <<<'EOF'\n{{x}}", "cat <<<'EOF'\n\"${RECIPE_VAR_x}\""},
      {"echo $(( 1 << 2 ))\n{{x}}", "echo $(( 1 << 2 ))\n\"${RECIPE_VAR_x}\""},
      {"echo \"<<'EOF'\" '<<EOF'\n{{x}}", "echo \"<<'EOF'\" '<<EOF'\n\"${RECIPE_VAR_x}\""},
      {"# cat <<'EOF'\n{{x}}", "# cat <<'EOF'\n\"${RECIPE_VAR_x}\""},
  });
}

TEST_CASE("shell references in comments are left as written and not resolved") {
  check_rows({
      {"echo {{x}} # uses {{x}}", R"(echo "${RECIPE_VAR_x}" # uses {{x}})"},
      {"# {{undeclared_anywhere}}\necho {{x}}", "# {{undeclared_anywhere}}\necho \"${RECIPE_VAR_x}\""},
      {"echo a#{{x}}", R"(echo a#"${RECIPE_VAR_x}")"},
      {"echo $#{{x}}", R"(echo $#"${RECIPE_VAR_x}")"},
      {"echo \"# {{x}}\" '#{{x}}'", R"(echo "# ${RECIPE_VAR_x}" '#'"${RECIPE_VAR_x}"'')"},
      {"echo $(# {{x}}\necho {{x}})", "echo $(# {{x}}\necho \"${RECIPE_VAR_x}\")"},
      {"cat <<EOF\n# {{x}}\nEOF", "cat <<EOF\n# ${RECIPE_VAR_x}\nEOF"},
      {"echo ${#v} {{x}}", R"(echo ${#v} "${RECIPE_VAR_x}")"},
  });
  const auto r = render_shell("# {{nothing_declared}}", {context(), nullptr, undefined_mode::strict});
  CHECK(r.ok());
  CHECK(r.variables.empty());
}

TEST_CASE("shell references in arithmetic positions must hold integer literals") {
  check_rows({
      {"echo $(( {{n}} + 1 ))", R"(echo $(( "${RECIPE_VAR_n}" + 1 )))"},
      {R"~(echo "$(( {{n}} * 2 ))")~", R"~(echo "$(( "${RECIPE_VAR_n}" * 2 ))")~"},
      {"(( {{neg}} < 0 )) && echo {{x}}", R"((( "${RECIPE_VAR_neg}" < 0 )) && echo "${RECIPE_VAR_x}")"},
      {"if (( {{n}} )); then echo; fi", R"(if (( "${RECIPE_VAR_n}" )); then echo; fi)"},
      {"for (( i = 0; i < {{n}}; i++ )); do :; done", R"(for (( i = 0; i < "${RECIPE_VAR_n}"; i++ )); do :; done)"},
      {"let y={{n}}+1 z={{plus}}", R"(let y="${RECIPE_VAR_n}"+1 z="${RECIPE_VAR_plus}")"},
      {"let 'y = {{n}}'", R"(let 'y = '"${RECIPE_VAR_n}"'')"},
      {"[[ {{n}} -eq 42 && \"$a\" -lt '{{neg}}' ]]", R"([[ "${RECIPE_VAR_n}" -eq 42 && "$a" -lt ''"${RECIPE_VAR_neg}"'' ]])"},
      {"echo $[ {{n}} + 1 ]", R"(echo $[ "${RECIPE_VAR_n}" + 1 ])"},
      {"echo ${arr[{{n}}]} \"${arr[{{neg}}]}\"", R"(echo ${arr["${RECIPE_VAR_n}"]} "${arr["${RECIPE_VAR_neg}"]}")"},
      {"arr[{{n}}]={{x}}", R"(arr["${RECIPE_VAR_n}"]="${RECIPE_VAR_x}")"},
      {"echo ${s:{{n}}:{{n}}}", R"(echo ${s:"${RECIPE_VAR_n}":"${RECIPE_VAR_n}"})"},
      {"echo $(( $(echo {{x}}) + 1 ))", R"(echo $(( $(echo "${RECIPE_VAR_x}") + 1 )))"},
      // Not arithmetic: single brackets, other [[ ]] operators, quoted text, `let` as an argument.
      {"[ {{x}} -eq 1 ]", R"([ "${RECIPE_VAR_x}" -eq 1 ])"},
      {"[[ {{x}} == v* && -n {{x}} ]] && [[ {{n}} -gt 1 ]]",
       R"([[ "${RECIPE_VAR_x}" == v* && -n "${RECIPE_VAR_x}" ]] && [[ "${RECIPE_VAR_n}" -gt 1 ]])"},
      {"echo let {{x}}; echo '$(( {{x}} ))'", R"(echo let "${RECIPE_VAR_x}"; echo '$(( '"${RECIPE_VAR_x}"' ))')"},
      {"echo file[{{x}}]", R"(echo file["${RECIPE_VAR_x}"])"},
      {"(( 1 )); echo {{x}}", R"((( 1 )); echo "${RECIPE_VAR_x}")"},
  });
}

TEST_CASE("the shell lexer marks where bash reads a variable name or runs code") {
  const auto flags = [](std::string_view script) {
    std::vector<text_range> ranges;
    for (auto at = script.find("@@"); at != std::string_view::npos; at = script.find("@@", at + 2))
      ranges.push_back({at, at + 2});
    std::string out;
    for (const auto& p : lex_shell(script, ranges).positions)
      out += p.arithmetic ? 'A' : p.name ? 'N' : p.code ? 'C' : '-';
    return out;
  };
  const std::vector<std::pair<std::string, std::string>> rows = {
      {"read a @@ -r @@ <<< @@", "NN-"},
      {"read -p @@ -a @@ -d @@ x", "-N-"},
      {"printf -v @@ @@ @@; printf -v\"x_@@\" x", "N--N"},
      {"declare -i n=@@ m @@=@@; n=@@; m+=@@", "ANAAA"},
      {"declare -a a=([@@]=@@); declare -A m=([@@]=@@); m[@@]=1; a[@@]=@@", "A----A-"},
      {"local -n r=@@; r=@@; export -n e=@@", "NN-"},
      {"f() { n=@@; }; typeset -i n", "A"},
      {"declare -i n; read n <<< @@; echo @@", "A-"},
      {"unset @@ 'a[@@]'; unset -f @@", "NA-"},
      {"eval @@; trap @@ EXIT; trap -p @@", "CC-"},
      {"bash -c @@ @@; bash @@; sh -o errexit -ec @@", "C--C"},
      {"PS4=@@ PROMPT_COMMAND=@@ x=@@ cmd", "CC-"},
      {"command read @@; env X=1 nohup eval @@; timeout 5 bash -c @@", "NCC"},
      {"[[ -v @@ && -v a[@@] ]]; [ -v @@ ]; test -R @@", "NANN"},
      {"getopts @@ @@; wait -p @@; mapfile -C @@ -t @@", "-NNCN"},
      {"echo @@ >@@ 2>@@; cat <<< @@; alias x=@@", "----C"},
      {"ssh -p @@ @@ ls @@; ssh -o X=1 host @@", "--CC"},
      {"su -c @@ @@; flock -w 5 @@ -c @@; script -qc @@ /dev/null; watch -n 1 @@", "C--CCC"},
      {"function f { read @@; }; g() { eval @@; }; if read @@; then (unset @@); fi", "NCNN"},
      {"x=1 y=@@ read @@ && echo $(printf -v @@ x) `eval @@`", "-NNC"},
  };
  for (const auto& [script, expected] : rows) {
    INFO("script: " << script);
    CHECK(flags(script) == expected);
  }
}

TEST_CASE("shell rendering refuses what it cannot make safe") {
  const std::vector<std::pair<std::string, std::string>> rows = {
      {"echo $(( {{x}} + 1 ))", "{{x}} is in an arithmetic position"},
      {"(( {{expr}} ))", "{{expr}} is in an arithmetic position"},
      {"(( {{flt}} ))", "{{flt}} is in an arithmetic position"},
      {"(( {{nothing}} ))", "{{nothing}} is in an arithmetic position"},
      {"let y={{x}}", "{{x}} is in an arithmetic position"},
      {"let \"y = {{x}}\"", "{{x}} is in an arithmetic position"},
      {"[[ {{x}} -eq 1 ]]", "{{x}} is in an arithmetic position"},
      {"[[ 1 -ge '{{x}}' ]]", "{{x}} is in an arithmetic position"},
      {"echo ${a[{{x}}]}", "{{x}} is in an arithmetic position"},
      {"a[{{x}}]=1", "{{x}} is in an arithmetic position"},
      {"echo ${s:1:{{x}}}", "{{x}} is in an arithmetic position"},
      {"for ((i={{x}};;)); do :; done", "{{x}} is in an arithmetic position"},
      {"cat <<'EOF'\n{{eof}}\nEOF", "contains its delimiter line"},
      {"cat <<'EOF'\n{{ends}}F\nEOF", "contains its delimiter line"},
      {"cat <<'EOF'\n{{empty}}EOF\nEOF\n", "contains its delimiter line"},
      {"cat <<-'EOF'\n\t{{ends}}F\n\tEOF", "contains its delimiter line"},
      {"cat <<-'EOF'\n{{tab_eof}}\nEOF", "has a line starting with a tab"},
      {"cat <<'END'\nok\nEND\ncat <<'EOF'\n{{eof}}\nEOF", "the quoted heredoc 'EOF' (at {{eof}})"},
      {"cat <<-'EOF'\n{{tabbed}}\nEOF", "has a line starting with a tab"},
      {"cat <<-'EOF'\n\t\t{{lead_tab}}\nEOF", "has a line starting with a tab"},
      {"echo {{nul}}", "holds a NUL byte"},
      {"cat <<'EOF'\n{{nul}}\nEOF", "holds a NUL byte"},
      {"cat <<{{x}}\nval\n", "cannot be part of a heredoc delimiter"},
      {"cat <<'{{x}}'\nval\n", "cannot be part of a heredoc delimiter"},
      {"echo \\{{x}}", "follows a backslash"},
      {"echo \"\\{{x}}\"", "follows a backslash"},
      {"echo $'\\{{x}}'", "follows a backslash"},
      {"cat <<EOF\n\\{{x}}\nEOF", "follows a backslash"},
      {"echo ${{x}}", "directly follows '$'"},
      {"echo \"${{x}}\"", "directly follows '$'"},
      {"echo `cat <<'EOF'\n{{x}}\nEOF\n`", "quoted heredoc inside backticks"},
      // Delimiters only bash can evaluate: the lexer stops rather than guess where bodies end.
      {"cat <<'E'$(x)\n{{x}}\nE$(x)\n", "cannot tell how bash reads {{x}}: a heredoc delimiter holds a substitution"},
      {"cat <<`x`\n{{x}}\n", "a heredoc delimiter holds a substitution"},
      {"cat <<$'E\\x41F'\nEAF\n{{x}}", "a heredoc delimiter uses escapes inside $'"},
  };
  for (const auto& [command, message] : rows) {
    INFO("command: " << command);
    CHECK_THAT(render(command), Catch::StartsWith("ERROR: ") && Catch::Contains(message));
  }
  std::string deep = "echo ";
  for (int k = 0; k < 300; ++k) deep += "$(";
  CHECK_THAT(render(deep + "{{x}}"), Catch::Contains("cannot tell how bash reads {{x}}: the command nests more than 200 levels deep"));
  CHECK(render(deep.substr(0, 5 + 2 * 150) + "{{x}}") == deep.substr(0, 5 + 2 * 150) + "\"${RECIPE_VAR_x}\"");
}

TEST_CASE("shell rendering follows the undefined-reference rules of templates") {
  const name_set declared = {"x", "later"};
  CHECK_THAT(render("echo {{typo}}", undefined_mode::normal, &declared),
             Catch::StartsWith("ERROR: undefined variable 'typo'"));
  CHECK_THAT(render("echo {{later}}", undefined_mode::strict, &declared), Catch::StartsWith("ERROR: {{later}} has no value"));
  const auto r = render_shell("echo {{later}} {{obj.missing}}", {context(), &declared, undefined_mode::normal});
  REQUIRE(r.ok());
  CHECK(r.script == R"(echo "${RECIPE_VAR_later}" "${RECIPE_VAR_obj__missing}")");
  CHECK(r.variables == std::vector<shell_variable>{{"RECIPE_VAR_later", ""}, {"RECIPE_VAR_obj__missing", ""}});
  CHECK(r.warnings.size() == 2);
  const auto lenient = render_shell("echo {{typo}}", {context(), &declared, undefined_mode::lenient});
  REQUIRE(lenient.ok());
  CHECK(lenient.variables == std::vector<shell_variable>{{"RECIPE_VAR_typo", ""}});
  CHECK(lenient.warnings.size() == 1);
}

TEST_CASE("each distinct shell reference gets one valid, unique variable") {
  const auto r = render_shell("echo {{x}} \"{{x}}\" {{obj.status}} {{list[1]}} {{list.0}} {{a-b}} {{a_b}} {{dash-name}} "
                              "{{n}} {{obj}} {{flt}}\ncat <<'EOF'\n{{empty}}\nEOF",
                              {context()});
  REQUIRE(r.ok());
  CHECK(r.script ==
        "echo \"${RECIPE_VAR_x}\" \"${RECIPE_VAR_x}\" \"${RECIPE_VAR_obj__status}\" \"${RECIPE_VAR_list__1}\" "
        "\"${RECIPE_VAR_list__0}\" \"${RECIPE_VAR_a_b}\" \"${RECIPE_VAR_a_b_2}\" \"${RECIPE_VAR_dash_name}\" "
        "\"${RECIPE_VAR_n}\" \"${RECIPE_VAR_obj}\" \"${RECIPE_VAR_flt}\"\ncat <<'EOF'\n\nEOF");
  CHECK(r.variables == std::vector<shell_variable>{{"RECIPE_VAR_x", "val"},
                                                   {"RECIPE_VAR_obj__status", "ok"},
                                                   {"RECIPE_VAR_list__1", "20"},
                                                   {"RECIPE_VAR_list__0", "10"},
                                                   {"RECIPE_VAR_a_b", "dash"},
                                                   {"RECIPE_VAR_a_b_2", "under"},
                                                   {"RECIPE_VAR_dash_name", "d"},
                                                   {"RECIPE_VAR_n", "42"},
                                                   {"RECIPE_VAR_obj", R"({"status":"ok"})"},
                                                   {"RECIPE_VAR_flt", "1.5"}});
  CHECK(r.warnings.empty());
  CHECK(shell_variable_name(*parse_reference("a['b c'].d-e[3]")) == "RECIPE_VAR_a__b_c__d_e__3");
  CHECK(render("echo '{{#if x}}' {{ a b }}") == "echo '{{#if x}}' {{ a b }}");
}

TEST_CASE("the shell lexer reports heredoc bodies and positions") {
  const std::string text = "cat <<A <<-'B'\nbody {{r}}\nA\n\tquoted\n\tB\necho \"{{r}}\" # {{r}}\n";
  std::vector<text_range> ranges;
  for (const auto& s : find_references(text)) ranges.push_back({s.begin, s.end});
  const auto lexed = lex_shell(text, ranges);
  REQUIRE(lexed.heredocs.size() == 2);
  CHECK(lexed.heredocs[0].delimiter == "A");
  CHECK_FALSE(lexed.heredocs[0].quoted);
  CHECK(text.substr(lexed.heredocs[0].body.begin, lexed.heredocs[0].body.end - lexed.heredocs[0].body.begin) == "body {{r}}\n");
  CHECK(lexed.heredocs[1].delimiter == "B");
  CHECK(lexed.heredocs[1].quoted);
  CHECK(lexed.heredocs[1].strip_tabs);
  CHECK(text.substr(lexed.heredocs[1].body.begin, lexed.heredocs[1].body.end - lexed.heredocs[1].body.begin) == "\tquoted\n");
  REQUIRE(lexed.positions.size() == 3);
  CHECK(lexed.positions[0].quoting == shell_quoting::heredoc);
  CHECK(lexed.positions[0].heredoc == 0);
  CHECK(lexed.positions[1].quoting == shell_quoting::double_quoted);
  CHECK(lexed.positions[2].quoting == shell_quoting::comment);
  CHECK(lex_shell("echo $(( 1", {}).positions.empty());  // unterminated constructs end quietly
}
