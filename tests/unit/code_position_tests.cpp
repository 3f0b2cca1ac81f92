// Templates never reach a code position (docs/reference/templates.md, "Code positions"): a
// property test composing wrappers, shells, interpreters, pipes, here-strings and heredocs
// around a reference at a code position — every one is refused, whatever the value — and the
// same wrappers around data positions, which still render.
#include <catch2/catch.hpp>

#include "shell/shell_lexer.hpp"
#include "shell/shell_render.hpp"

#include <boost/json/parse.hpp>

#include <random>

using namespace arun::engine;

namespace {

const boost::json::object& context() {
  static const auto ctx = boost::json::parse(R"({"v": "hello", "x": "1"})").as_object();
  return ctx;
}

std::string render_error(const std::string& command) { return render_shell(command, {context()}).error; }

// {W} is where wrappers go, {S} a shell, {Q} the reference in some quoting.
const std::vector<std::string> code_forms = {
    "{W}{S} -c {Q}", "{W}{S} -ec {Q}", "{W}{S} -xc {Q}", "{W}{S} -lc {Q}", "{W}{S} -e -o pipefail -c {Q}",
    "{W}{S} -c -- {Q}", "{W}{S} +x -c {Q} _ a", "{W}{S} --norc -c {Q}", "{W}{S} -O extglob -c {Q}",
    "{W}busybox sh -c {Q}", "{W}python3 -c {Q}", "{W}python -c {Q} arg", "{W}python3.11 -Bc {Q}",
    "{W}perl -e {Q}", "{W}perl -ne {Q} file", "{W}perl -lne {Q}", "{W}perl -E {Q}", "{W}perl -i.bak -pe {Q} f",
    "{W}ruby -e {Q}", "{W}ruby -ne {Q}", "{W}node -e {Q}", "{W}node --eval {Q}", "{W}node --eval={Q}", "{W}node -p {Q}",
    "{W}node -pe {Q}", "{W}nodejs -e {Q}", "{W}php -r {Q}", "{W}lua -e {Q}", "{W}Rscript -e {Q}", "{W}julia -e {Q}",
    "{W}awk {Q}", "{W}awk -F: {Q} file", "{W}awk -v n=1 {Q}", "{W}gawk -e {Q}", "{W}mawk {Q}",
    "{W}sed {Q}", "{W}sed -n -e {Q} f", "{W}sed -E --expression={Q}", "{W}sed -i {Q} f",
    "{W}expect -c {Q}", "{W}\"$SHELL\" -c {Q}", "{W}$PYTHON -c {Q}",
    // its program from standard input
    "printf '%s\\n' {Q} | {W}{S}", "echo {Q} | {W}{S} -s -- a", "echo {Q} | {W}python3", "echo {Q} | {W}python3 -",
    "echo {Q} | {W}perl", "echo {Q} | {W}node", "echo {Q} | tee /dev/null | {W}{S}", "{ echo {Q}; } | {W}{S}",
    "( echo {Q} ) | {W}{S}", "for a in 1; do echo {Q}; done | {W}{S}", "echo \"$(echo {Q})\" | {W}{S}",
    "{W}{S} <<< {Q}", "{W}python3 <<< {Q}", "{W}{S} /dev/stdin <<< {Q}",
    "{W}{S} <<EOF\necho {{v}}\nEOF", "{W}{S} <<'EOF'\necho {{v}}\nEOF", "{W}python3 - <<-EOF\nprint({{v}})\nEOF",
    "cat <<EOF | {W}{S}\n{{v}}\nEOF", "{W}{S} < <(echo {Q})", "{W}{S} <(echo {Q})", "{W}{S} --rcfile <(echo {Q}) -i",
    "{W}python3 <(echo {Q})", "{W}awk -f <(echo {Q}) file", "echo {Q} | {W}xargs -I{} {S} -c 'echo {}'",
    "echo {Q} | {W}ssh host", "{W}ssh host {Q}", "{W}ssh -T host <<EOF\n{{v}}\nEOF",
    // programs that run their words
    "coproc {W}{S} -c {Q}", "{W}parallel {Q} ::: a", "{W}parallel echo {Q} ::: a", "{W}parallel -j 2 {Q} ::: a", "{W}parallel ::: {Q}",
    "echo {Q} | {W}parallel", "{W}watch {Q}", "{W}su -c {Q}", "{W}env -S {Q}", "{W}env --split-string={Q}",
    "{W}{S} -c \"$(printf %s {Q})\"",
    // bash's own builtins, behind the wrappers that can reach a builtin
    "{B}eval {Q}", "{B}eval \"$(echo {Q})\"", "{B}source <(echo {Q})", "{B}. <(printf %s {Q})", "coproc NAME { eval {Q}; }",
    "{B}trap {Q} EXIT", "PS4={Q}", "PS4=\"$(printf %s {Q})\" cmd", "{B}source /dev/stdin <<< {Q}",
    // a command word bash expands into a shell and its code: braces, globs, $'…', expansions
    "{W}{sh,-c,{Q}}", "{W}{sh,-c} {Q}", "{W}{ba,}sh -c {Q}", "{W}/bin/[s]h -c {Q}", "{W}/usr/bin/pytho?3 -c {Q}",
    "{W}/bin/*sh -c {Q}", "{W}$'\\x73h' -c {Q}", "{W}$'\\163\\150' -c {Q}", "{W}$'\\u0073h' -c {Q}", "{W}$'sh' -c {Q}",
    "\"${cmd[@]}\" {Q}", "\"$@\" {Q}", "${cmd[@]} x {Q}", "$* {Q}", "env \"${cmd[@]}\" {Q}", "nice \"$@\" {Q}",
    "$(echo sh) -c {Q}",
    // xargs and parallel append their input to a command that waits for its code
    "echo {Q} | {W}xargs {S} -c", "echo {Q} | {W}xargs -0 python3 -c", "echo {Q} | {W}xargs awk", "{W}xargs {S} -c <<< {Q}",
    "echo {Q} | {W}xargs -n1 perl -e", "{W}parallel {S} -c ::: {Q}", "echo {Q} | {W}parallel python3 -c", "{W}parallel 'sh -c' ::: {Q}",
    // a script read from another descriptor
    "{W}{S} /dev/fd/3 3<<< {Q}", "exec 3<<< {Q}; {W}{S} /dev/fd/3", "{W}python3 /proc/self/fd/4 4< <(echo {Q})",
    "{W}{S} /dev/fd/3 3<<EOF\n{{v}}\nEOF", "exec {fd}<<< {Q}; {W}{S} \"/dev/fd/$fd\"", "{B}source /dev/fd/3 3<<< {Q}",
    "{W}awk -f /dev/stdin <<< {Q}", "echo {Q} | {W}awk -f -", "BASH_ENV=/dev/stdin {W}{S} -c : <<< {Q}",
    // a shell reading a command's output, a group's input
    "echo {Q} > >({S})", "echo {Q} | tee >({S}) >/dev/null", "echo {Q} | tee >(cat | python3)", "exec > >({S}); echo {Q}",
    "{ echo {Q}; } > >({S})", "{ {S}; } <<< {Q}", "( {S} ) <<< {Q}", "while read -r l; do {S}; done < <(echo {Q})",
    "if true; then {S}; fi <<< {Q}", "coproc {S}; echo {Q} >&\"${COPROC[1]}\"",
    // env's options, GNU abbreviations of long options
    "{W}env -iS {Q}", "{W}env -iS{Q}", "{W}env -u X -S {Q}", "{W}env --split={Q}", "{W}env --s {Q}", "{W}sed --e={Q} f",
    "{W}sed --expr {Q} f", "{W}gawk --sourc={Q}", "{W}gawk --so {Q} f",
    // variables whose values programs run
    "BASH_ENV={Q} {W}{S} -c :", "{W}env BASH_ENV={Q} {S} script.sh", "{W}env 'BASH_FUNC_f%%=() { echo {{v}}; }' {S} -c f",
    "GIT_SSH_COMMAND={Q} git fetch", "{W}env GIT_SSH_COMMAND={Q} git fetch", "export PERL5OPT={Q}", "EDITOR={Q} git commit",
    // more programs
    "{W}ed -s file <<< {Q}", "echo {Q} | {W}ed file", "echo {Q} | {W}m4", "{W}dc <<< {Q}", "{W}dc -e {Q}", "{W}dc --exp={Q}",
    "{W}osh -c {Q}", "{W}pwsh -Command {Q}", "{W}nu -c {Q}", "{W}guile -c {Q}", "{W}gnuplot -e {Q}",
    // the third review: a remote shell reading stdin, wrappers that start a shell alone, long
    // options, programs named as an option's argument
    "{W}ssh host bash -s <<< {Q}", "{W}ssh host 'bash -s' <<< {Q}", "ssh host python3 <<EOF\n{{v}}\nEOF", "{W}sudo -s <<< {Q}",
    "{W}sudo -i <<< {Q}", "{W}chroot /srv <<< {Q}", "{W}unshare -U <<< {Q}", "{W}nsenter -t 1 -a <<< {Q}", "newgrp docker <<< {Q}",
    // the fifth review: the running shell by its /proc path, a shell named by an expansion with
    // a cluster or options before its -c, variables named as commands, make's environment
    "{W}/proc/self/exe -c {Q}", "{W}//proc/./self/exe -ec {Q}", "{W}/proc/1234/exe -c {Q}", "{W}/proc/thread-self/exe <<< {Q}",
    "{W}\"$SHELL\" -ec {Q}", "{W}\"$BASH\" -xc {Q}", "{W}$SHELL -o pipefail -c {Q}", "{W}$SHELL -o errexit -o pipefail -ec {Q}", "{W}\"$SHELL\" -O extglob -ec {Q}",
    "VIMINIT={Q} vim -es", "EXINIT={Q} ex", "GH_PAGER={Q} gh pr list", "{W}env PSQL_EDITOR={Q} psql", "export DELTA_PAGER={Q}",
    "CC={Q} make", "CFLAGS={Q} gmake -j2", "{W}env CC={Q} make", "POSIXLY_CORRECT=1 sed -e {Q} f --sandbox",
    "{W}sash -c {Q}", "{W}jython -c {Q}", "{W}emacs --batch --eval {Q}", "{W}emacs -batch -eval {Q}",
    "{W}rsync -e{Q} a b", "{W}rsync -avze {Q} a b", "{W}rsync -aze{Q} a b", "{W}bash -c 'source /dev/fd/3' 3<<< {Q}",
    "{W}bash 3<<< {Q} -c '. /dev/fd/3'", "{W}sh -c 'sh <&4' 4< <(echo {Q})",
    // a function that runs its arguments as code, or hands them to a shell or interpreter
    "run() { bash \"$@\"; }; run -c {Q}", "run() { {W}python3 \"$@\"; }; run -c {Q}", "run() { bash -c \"$1\"; }; run {Q}",
    "run() { {B}eval \"$*\"; }; run {Q}", "run() { \"$@\"; }; run eval {Q}", "run() { bash \"$1\" \"$2\"; }; run -c {Q}",
    "BASH_ENV=<(echo {Q}) {W}bash -c :", "{B}eval y=({Q})", "{B}eval y+=(a {Q})", "{W}env ENV=<(echo {Q}) sh -i",
    "function run { {W}sh -c \"${1}\" _; }; run {Q}", "run() { sh -ec \"$@\"; }\nrun {Q}",
    "{W}perl -d -e {Q}", "{W}perl -M -e {Q}", "{W}node -p -e {Q}", "{W}node -p --eval {Q}", "{W}ruby --encoding UTF-8 -e {Q}",
    "{W}ruby --disable gems -e {Q}", "{W}sed --file=- f <<< {Q}", "{W}sed -f- f <<< {Q}", "{W}awk -f/dev/stdin f <<< {Q}",
    "{W}gawk --file=/dev/stdin <<< {Q}",
    "{W}sg docker -c {Q}", "{W}su --command={Q}", "{W}su --command {Q}", "{W}runuser -u x --command={Q}", "{W}flock F --com {Q}", "{W}flock \"$D/lock\" --command {Q}", "{W}\"$X\" --eval={Q}",
    "{W}script -q --command={Q} /dev/null", "{W}su --session-command={Q}", "{W}docker run --entrypoint sh img -c {Q}",
    "{W}docker run --entrypoint=sh img -c {Q}", "{W}start-stop-daemon --start --exec /bin/sh -- -c {Q}",
    // input piped into a subshell, a compound command, a function
    "echo {Q} | ( {S} )", "echo {Q} | if true; then {S}; fi", "echo {Q} | while read -r l; do {S}; done",
    "f() { python3; }; echo {Q} | f", "f() { {S}; }; f <<< {Q}", "f() ( {S} ); f <<< {Q}", "function g { {S}; }; echo {Q} | g",
    "function g() { {S}; }\ng <<< {Q}",
    // stdin from another descriptor or an earlier exec; descriptor paths spelt otherwise
    "{S} 3<<< {Q} <&3", "{S} 3< <(echo {Q}) <&3-", "exec 3<<< {Q}; {S} <&3", "exec 0<<< {Q}; {S}", "exec < <(echo {Q}); {S}",
    "exec <<< {Q}; {S}", "{W}{S} //dev/stdin <<< {Q}", "{W}{S} /dev/../dev/stdin <<< {Q}", "{W}{S} /dev/fd//3 3<<< {Q}",
    "{W}{S} /dev/./fd/3 3<<< {Q}", "{W}{S} ./../../dev/stdin <<< {Q}", ". -- /dev/stdin <<< {Q}", "source -- /dev/stdin <<< {Q}",
    "source -p . /dev/stdin <<< {Q}",
    // shells' long options, env -S naming a shell, xargs feeding a wrapper, a substitution reading stdin
    "{W}bash --rcfile x <<< {Q}", "{W}bash --init-file x -s <<< {Q}", "{W}zsh --emulate sh -c {Q}", "{W}fish --command={Q}",
    "{W}fish --init-command {Q}", "{W}nu --commands {Q}", "{W}env -S'sh -c' {Q}", "{W}env \"-S sh -c\" {Q}",
    "{W}env -vS 'sh -c' {Q}", "echo {Q} | {W}env -S sh", "{W}xargs env <<< {Q}", "echo {Q} | {W}xargs nice",
    "echo {Q} | xargs timeout 5", "parallel -a <(echo {Q}) sh -c", "echo {Q} | eval \"$(cat)\"", "echo {Q} | source <(cat)",
    "echo {Q} | {W}bash <(cat)",
    // variables a program runs, set by builtins; command keys of ssh and git; more variables
    "printf -v PS4 %s {Q}; set -x", "read -r PS4 <<< {Q}", "mapfile -t PROMPT_COMMAND <<< {Q}", "read -r BASH_ENV <<< {Q}",
    "{W}git -c core.sshCommand={Q} ls-remote x", "{W}git -c alias.x={Q} x", "{W}ssh -o ProxyCommand={Q} host",
    "{W}ssh -oProxyCommand={Q} host", "{W}ssh -o 'LocalCommand {{v}}' host", "GIT_CONFIG_PARAMETERS={Q} git status",
    "GIT_CONFIG_VALUE_0={Q} git status", "{W}scp -o ProxyCommand={Q} a b:", "{W}rsync -e {Q} a b:", "{W}rsync --rsh={Q} a b:",
    "RSYNC_RSH={Q} rsync a b:", "FCEDIT={Q} fc",
    // interpreters' other code arguments, programs reading code from stdin
    "{W}python3 -m timeit {Q}", "{W}python3 -m timeit -s {Q} x", "{W}python3 -mtimeit {Q}", "{W}perl -M{Q} -e 1",
    "{W}perl -d:{Q} x.pl", "{W}php --run {Q}", "{W}deno eval {Q}", "{W}ipython -c {Q}",
    "{W}python3 --check-hash-based-pycs always -c {Q}", "{W}at now <<< {Q}", "echo {Q} | {W}batch", "echo {Q} | crontab -",
    "{W}ex -s file <<< {Q}", "{W}vim -es <<< {Q}", "{W}vim -c {Q} f", "{W}vim +{Q} f", "{W}vim --cmd {Q} f",
    "echo {Q} | {W}make -f -", "{W}make --eval={Q}", "{W}cmake -P /dev/stdin <<< {Q}",
    // the fourth review: line continuations, options with separate arguments, -c strings and
    // substitutions reading stdin, arrays, make variables, descriptor relays, aliases
    "{W}python3 -c \\\n {Q}", "{W}{S} \\\n -c {Q}", "{W}{S} \\\n <<< {Q}", "{W}b\\\nash -c {Q}", "trap \\\n {Q} EXIT",
    "{W}perl -I lib -e {Q}", "{W}node --env-file .env -e {Q}", "{W}node -C dev -e {Q}", "{W}awk -W interactive {Q}",
    "{W}gawk -d/dev/null {Q}", "{W}julia -t 4 -e {Q}", "{W}bash -c 'sh' <<< {Q}", "{W}bash -c 'cd /tmp && bash -s' <<< {Q}",
    "echo {Q} | { out=$(bash); echo \"$out\"; }", "{ out=$(sh); } <<< {Q}", "echo {Q} | echo \"$(sh)\"", "x=$(sh) <<< {Q}",
    "declare -a arr={Q}", "local -a arr=\"{{v}}\"", "declare -A m={Q}", "arr=(1); declare arr={Q}", "compgen -W {Q} x",
    "{W}make -C build VERSION={Q}", "{W}make install PREFIX={Q}", "{W}m4 -DNAME={Q}", "{W}m4 -D NAME={Q}",
    "exec 4<<< {Q}; exec 0<&4; {S}", "exec 5<<< {Q}; exec 4<&5; {S} <&4", "{S} 4<<< {Q} < /dev/fd/4",
    "coproc cat; echo {Q} >&\"${COPROC[1]}\"; {S} <&\"${COPROC[0]}\"", "run() { bash \"$@\"; }; run <<< {Q}",
    "xargs -a <(echo {Q}) -I{} sh -c '{}'", "xargs --arg-file=<(echo {Q}) sh -c", "alias run='bash -c'\nrun {Q}",
    "{,}{,}{,}{,}{,}{,}{,}{,}{,}{sh,-c,{Q}}", "{W}vagrant ssh -c {Q}", "{W}mosh host -- ls {Q}", "{W}autossh -M 0 host ls {Q}",
    "{W}raku -e {Q}", "{W}bash5 -c {Q}", "{W}zsh-5.9 -c {Q}", "{W}pythonw -c {Q}", "{W}vagrant ssh <<< {Q}", "{W}py -3 -c {Q}",
    "{W}erl -noshell -eval {Q}", "{W}hush -c {Q}", "{W}loksh -c {Q}", "MAKEFLAGS=--eval={Q} make", "TAR_OPTIONS={Q} tar xf a.tar",
    "{W}git -c core.gitProxy={Q} fetch",
};

const std::vector<std::string> builtin_wrappers = {"", "command ", "builtin ", "time ", "! ", "command builtin "};

const std::vector<std::string> wrappers = {
    "", "env VAR=x ", "env -i ", "nice -n 5 ", "timeout 3 ", "timeout -s KILL 3 ", "ionice -c3 ", "ionice -c 3 ",
    "taskset 1 ", "taskset -c 0 ", "setpriv -- ", "setpriv --reuid 4242 --clear-groups ", "sudo -u x ", "doas -u x ",
    "chroot / ", "unshare -r ", "nsenter -t 1 -m ", "xargs ", "xargs -0 ", "xargs -n 1 ", "command ", "exec ",
    "exec -a name ", "nohup ", "stdbuf -oL ", "time ", "setsid ", "flock /tmp/l ", "chrt -f 1 ", "strace -f ",
    "docker exec c ", "kubectl exec pod -- ", "systemd-run --user --wait ", "firejail --quiet ", "env VAR=x nice timeout 3 ",
};

const std::vector<std::string> shells = {"sh",   "bash", "dash", "zsh",  "ksh",     "mksh", "/bin/sh", "/usr/bin/bash",
                                         "'bash'", "fish", "osh",  "$'sh'", "$'\\x62ash'"};

const std::vector<std::string> quotings = {"{{v}}", "'echo {{v}}'", "\"echo {{v}}\"", "$'echo {{v}}'", "\"$(printf %s {{v}})\"",
                                           "'echo '{{v}}", "\"{{ v }}\""};

// Where the whole command may stand.
const std::vector<std::pair<std::string, std::string>> frames = {
    {"", ""}, {"x=$( ", " )"}, {"if ", "; then :; fi"}, {"{ ", "; }"}, {"( ", " )"}, {"f() { ", "; }"}, {"true && ", ""},
    {"", " &"}, {"out=`", "`"}, {": <(", ")"}, {"while ", "; do break; done"}, {"! ", ""},
};

// Data positions the same wrappers may stand in front of.
const std::vector<std::string> data_forms = {
    "{W}echo {Q}", "{W}printf '%s' {Q}", "{W}grep -- {Q} file", "{W}grep -c python3 {Q}", "{W}{S} -c 'echo \"$1\"' _ {Q}",
    "{W}python3 -c 'import sys; print(sys.argv[1])' {Q}", "{W}perl -e 'print $ARGV[0]' {Q}", "{W}node -e 'x' {Q}",
    "printf '%s' {Q} | {W}{S} -c 'cat'", "printf '%s' {Q} | {W}python3 script.py", "{W}awk '{print}' {Q}",
    "{W}sed 's/a/b/' {Q}", "{W}sed --sandbox \"s/a/{{v}}/\" f", "{W}jq -r .x <<< {Q}", "{W}python3 -m pip install {Q}",
    "{W}{S} script.sh {Q}", "{W}python3 script.py -c {Q}", "{W}{S} -c 'cat' <<< {Q}", "{W}parallel 'echo {}' ::: {Q}",
    "echo {Q} | {W}parallel 'echo {}'", "{W}env VAR={Q} {S} -c 'echo \"$VAR\"'", "echo {Q} | {W}xargs -0 {S} -c 'echo \"$1\"' _",
    "{W}{S} -c 'echo \"$RECIPE_VAR_v\"'", "{W}cat <<< {Q}", "cat <<EOF\n{{v}}\nEOF", "echo {Q} | {W}awk '{print}'",
    "{W}{S} {Q}", "{W}source {Q}", "{W}perl -pi -e 's/a/b/' {Q}",
    "{W}mkdir -p out/{a,b}/{Q}", "{W}cp *.txt {Q}", "{W}cp * {Q}", "{W}ls ./*.log {Q}", "{W}\"$PYTHON\" script.py {Q}",
    "{W}cut -d $'\\t' -f1 {Q}", "{W}printf $'%s\\n' {Q}", "echo {Q} | {W}xargs echo", "echo {Q} | {W}xargs rm -f --",
    "{W}env GIT_DIR={Q} git status", "{W}{S} script.sh 3<<< {Q}", "exec 3<<< {Q}; cat /dev/fd/3", "{ cat; } <<< {Q}",
    "while read -r l; do echo \"$l\"; done <<< {Q}", "echo {Q} > >(cat)", "echo {Q} | tee >(wc -c)", "{W}parallel echo ::: {Q}",
    "{W}sed --expression='s/a/b/' {Q}", "{W}gawk --source='{print}' {Q}", "{W}env -u X {S} -c 'echo \"$1\"' _ {Q}",
    "$CC -c main.c -o {Q}", "${CC:-gcc} -o {Q} x.c", "$MAKE -C {Q}", "$CMD {Q}", "$(npm bin)/eslint {Q}",
    "{W}useradd -m -s /bin/bash -c {Q} deploy", "{W}usermod --shell=/bin/zsh -c {Q} bob", "{W}conda install -y python -c {Q}",
    "{W}pacman -S python {Q}", "{W}python3 script.py -c {Q}", "{W}git commit -c HEAD -m {Q}", "{W}ssh -o ConnectTimeout=5 {Q} ls",
    "{W}scp -o BatchMode=yes {Q} host:", "{W}git -c user.name={Q} commit -m x", "{W}rsync -a {Q} host:dir",
    "{W}parallel -j4 python3 process.py ::: {Q}", "{W}parallel bash build.sh {} ::: {Q}", "ls {Q}/*.sh | xargs -n1 bash -n",
    "find {Q} -name '*.sh' | xargs -n1 bash", "find {Q} -print0 | xargs -0 -n1 sh", "{W}make -C {Q} test",
    "{W}rsync -av -e 'ssh -p 2222' {Q} host:", "while read -r f; do sh \"$f\"; done < <(find {Q} -name '*.sh')",
    "exec > >(tee {Q}/log)", "{W}docker run --rm {Q}", "echo $(( $(stat -c %s {Q}) / 1024 ))", "curl -fsSL x | bash -s -- {Q}",
    "{W}python3 -c \\\n 'import sys; print(sys.argv[1])' {Q}", "declare -a arr=(a {Q})", "local -a files=(); files+=({Q})",
    "{W}perl -I lib script.pl {Q}", "{W}node --env-file .env app.js {Q}", "echo {Q} | {W}xargs -n1 echo",
    "echo {Q} | crontab -l", "{W}erl -noshell -s mod start {Q}",
};

std::string fill(std::string text, std::string_view key, const std::string& with) {
  for (std::size_t at = 0; (at = text.find(key, at)) != std::string::npos; at += with.size()) text.replace(at, key.size(), with);
  return text;
}

// A random composition; `find -exec` wraps the first line of the command.
std::string compose(std::mt19937& random, const std::vector<std::string>& forms, const std::vector<std::string>& quoting) {
  const auto pick = [&](const auto& list) -> const auto& { return list[random() % list.size()]; };
  const auto& form = pick(forms);
  // Only programs can follow `find -exec`; bash's builtins and keywords cannot.
  const bool program = form.starts_with("{W}");
  // xargs gives its command no stdin: it is no wrapper for a program reading its input.
  const bool reads_input = form.find('<') != std::string::npos || form.find('|') != std::string::npos;
  auto wrapper = pick(wrappers);
  while (reads_input && wrapper.find("xargs") != std::string::npos) wrapper = pick(wrappers);
  auto command = fill(fill(fill(fill(form, "{S}", pick(shells)), "{Q}", pick(quoting)), "{W}", wrapper), "{B}",
                      pick(builtin_wrappers));
  // The end of the first line, past line continuations (`\⏎`).
  auto first_line_end = [&] {
    for (auto at = command.find('\n'); at != std::string::npos; at = command.find('\n', at + 1))
      if (at == 0 || command[at - 1] != '\\') return at;
    return std::string::npos;
  };
  const bool find = program && random() % 5 == 0 && command.find('|') == std::string::npos && command.find('<') == std::string::npos;
  if (find) {
    const auto end = first_line_end();
    command = "find . -exec " + command.substr(0, end) + " \\;" + (end == std::string::npos ? "" : command.substr(end));
  }
  const auto nl = first_line_end();
  // A heredoc's body is read after the line that announced it: no `$( )` or backticks around it.
  auto [open, close] = pick(frames);
  while (nl != std::string::npos && (open.find('$') != std::string::npos || open.find('`') != std::string::npos || open.find('<') != std::string::npos))
    std::tie(open, close) = pick(frames);
  // A frame closes on the command's first line; heredoc bodies follow it.
  return nl == std::string::npos ? open + command + close : open + command.substr(0, nl) + close + command.substr(nl);
}

}  // namespace

TEST_CASE("property: a reference at a code position is refused whatever wraps the command") {
  const auto seed = GENERATE(range(0, 40));
  std::mt19937 random(static_cast<unsigned>(seed) * 7919U + 1U);
  for (int k = 0; k < 50; ++k) {
    const auto command = compose(random, code_forms, quotings);
    INFO("command: " << command);
    CHECK_THAT(render_error(command), Catch::Contains("is in code that") && Catch::Contains("runs"));
  }
}

TEST_CASE("property: the same wrappers around data positions still render") {
  const auto seed = GENERATE(range(0, 40));
  std::mt19937 random(static_cast<unsigned>(seed) * 104729U + 3U);
  const std::vector<std::string> data_quotings = {"{{v}}", "\"{{v}}\"", "'{{v}}'", "\"a {{ v }} b\""};
  for (int k = 0; k < 50; ++k) {
    const auto command = compose(random, data_forms, data_quotings);
    INFO("command: " << command);
    CHECK(render_error(command).empty());
  }
}

TEST_CASE("every code form is refused bare, and names what would run the value") {
  for (const auto& form : code_forms) {
    const auto command = fill(fill(fill(fill(form, "{S}", "sh"), "{Q}", "{{v}}"), "{W}", ""), "{B}", "");
    INFO("command: " << command);
    CHECK_THAT(render_error(command), Catch::StartsWith("{{v}} is in code that ") && Catch::Contains("sh -c '... \"$1\"' _ {{v}}") &&
                                          Catch::Contains("$RECIPE_VAR_v"));
  }
  CHECK_THAT(render_error("python3 -c {{v}}"), Catch::Contains("code that python3 -c runs"));
  CHECK_THAT(render_error("find . -exec sh -c 'echo {{v}}' \\;"), Catch::Contains("code that sh -c runs"));
  CHECK_THAT(render_error("echo 'echo {{v}}' | sh"), Catch::Contains("code that text piped into sh runs"));
  CHECK_THAT(render_error("sh <<< 'echo {{v}}'"), Catch::Contains("code that the standard input of sh runs"));
  CHECK_THAT(render_error("sed \"s/a/{{v}}/\" f"), Catch::Contains("--sandbox"));
  CHECK_THAT(render_error("echo {{v}} |\n  sh"), Catch::Contains("text piped into sh"));
  CHECK_THAT(render_error("x=$(cat <<EOF | sh\n{{v}}\nEOF\n)"), Catch::Contains("the standard input of sh"));
}

TEST_CASE("the fifth review's forms stay data where no code reads them") {
  for (const std::string command : {"CC={{v}} cc -o x x.c; make", "CC={{v}} ./configure && make", "$CC -c main.c -o {{v}}",
                                    "/proc/self/exe --version; echo {{v}}", "cat /proc/self/exe {{v}}", "MY_EDITOR_FILE={{v}} cmd",
                                    "sed --sandbox -e {{v}} f", "emacs --batch -l init.el {{v}}", "$SHELL script.sh {{v}}",
                                    "run() { bash \"$@\"; }; run script.sh {{v}}", "run() { sh -c 'echo \"$1\"' _ \"$1\"; }; run {{v}}",
                                    "run() { python3 tool.py \"$@\"; }; run {{v}}", "py() { python3 \"$@\"; }; py tool.py -c {{v}}",
                                    "run() { bash -c 'x'; }; run {{v}}", "rsync -avz -e ssh {{v}} dst", "rsync -f {{v}} a b",
                                    "bash -c 'cat /dev/fd/3' 3<<< {{v}}", "$PYTHON script.py -e {{v}}", "$DOCKER run -e FOO={{v}} img", "declare -a y=({{v}})", "y=(a {{v}}); echo \"${y[@]}\""}) {
    INFO("command: " << command);
    CHECK(render_error(command).empty());
  }
}

TEST_CASE("code positions do not leak past their command") {
  for (const std::string command : {"echo 'x' | sh; echo {{v}}", "sh <<< x\necho {{v}}", "sh <<EOF\nx\nEOF\ncat <<EOF\n{{v}}\nEOF",
                                    "{ echo {{v}}; }; echo x | sh", "echo {{v}} && echo x | sh", "echo {{v}}; sh -c 'x'",
                                    "(echo {{v}}); echo x | sh", "echo {{v}} | cat; sh", "grep sh {{v}} | cat",
                                    "echo {{v}} | grep python3", "coproc NAME { echo {{v}}; }", "python3 -c 'x' && echo {{v}}",
                                    "echo x > >(sh); echo {{v}}", "{ sh; } <<< x; echo {{v}}", "echo {{v}} | tee >(cat) | wc",
                                    "exec 3<<< x; bash /dev/fd/3; echo {{v}} 4<<< y", "echo {{v}} | xargs sh -c 'echo \"$1\"' _",
                                    "$CMD x; echo {{v}}", "{ sh; echo {{v}}; }", "( sh; echo {{v}} )", "sh /dev/fd/3 3<<< x; cat <<< {{v}}"}) {
    INFO("command: " << command);
    CHECK(render_error(command).empty());
  }
}
