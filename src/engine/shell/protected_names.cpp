// Names an upper-case alias of a context key must never take (docs/running.md,
// "Templates and the shell"): variables that configure a program — what it loads, runs, trusts,
// connects to or where it keeps its settings — and bash's own variables. A
// `--set git_config_parameters=…` must not become GIT_CONFIG_PARAMETERS (and with it a command for
// `git status` to run). A recipe that means to set such a variable says so in a step's `env:`.
#include "shell/context_export.hpp"
#include "shell/shell_lexer.hpp"

#include <algorithm>
#include <array>
#include <unordered_set>
#include <vector>

namespace arun::engine {
namespace {

// Whole families, by prefix. Sources: the ENVIRONMENT sections of the tools' manuals (git,
// ssh, gpg, python, perl, ruby, node/npm, cargo/rustc, go, java, dotnet, docker, kubectl,
// terraform, ansible, cloud and AI-provider CLIs, curl/openssl, glibc ld.so and malloc,
// bash, less, make/compilers) and the known environment-injection techniques.
constexpr std::string_view protected_prefixes[] = {
    // the runner and the step's hardened environment
    "ARUN_", "AMPLIHACK_", "RECIPE_VAR_",
    // the dynamic loader, libc, locales
    "LD_", "DYLD_", "GLIBC_", "MALLOC_", "LC_",
    // shells and terminals
    "BASH", "COMP_", "READLINE_", "ZSH", "ZDOTDIR", "TERM", "LESS", "PAGER", "MANPAGER",
    // version control and remote access
    "GIT_", "SSH_", "GPG", "GNUPG", "KRB5", "HG", "SVN_", "CVS_", "P4", "RSYNC_",
    // language runtimes and package managers
    "PYTHON", "PIP_", "PIPENV_", "POETRY_", "CONDA", "UV_", "VIRTUAL_ENV", "PERL", "RUBY", "GEM_", "BUNDLE_",
    "NODE_", "NPM_", "YARN_", "PNPM_", "DENO_", "BUN_", "CARGO_", "RUST", "CGO_", "JAVA_", "_JAVA_",
    "JDK_", "MAVEN_", "GRADLE_", "SBT_", "DOTNET_", "COMPLUS_", "CORECLR_", "LUA_", "TCL", "PHP",
    "R_PROFILE", "R_ENVIRON", "R_LIBS", "NVM_", "PYENV_", "RBENV_", "ASDF_", "NIX_", "GUIX_",
    // build tools
    "CMAKE_", "PKG_CONFIG", "CCACHE_", "DISTCC_",
    // containers, clusters, infrastructure and cloud credentials
    "DOCKER_", "COMPOSE_", "CONTAINERS_", "BUILDAH_", "PODMAN_", "KUBE", "HELM_", "TF_", "ANSIBLE_",
    "VAGRANT_", "AWS_", "AZURE_", "GOOGLE_", "GCLOUD_", "CLOUDSDK_", "SLURM_", "SBATCH_", "SALLOC_", "SRUN_",
    // agent CLIs and their providers
    "ANTHROPIC_", "CLAUDE", "OPENAI_", "CODEX_", "COPILOT_", "GEMINI_", "GITHUB_", "GH_", "GITLAB_", "GLAB_",
    // trust and networking
    "SSL_", "OPENSSL_", "CURL_", "REQUESTS_", "HTTP_", "HTTPS_", "FTP_", "ALL_PROXY", "NO_PROXY",
    // desktop session and privilege tools
    "XDG_", "DBUS_", "SYSTEMD_", "SUDO_",
    // editors
    "VIM", "EXINIT", "EMACS",
};

// Single names.
constexpr std::string_view protected_names[] = {
    "PATH", "HOME", "PWD", "OLDPWD", "SHELL", "USER", "LOGNAME", "TMPDIR", "TMP", "TEMP", "LANG", "LANGUAGE",
    "MAIL", "MAILPATH", "MAILCHECK", "EDITOR", "VISUAL", "BROWSER", "DISPLAY", "WAYLAND_DISPLAY", "XAUTHORITY",
    "HOSTNAME", "HOSTALIASES", "LOCALDOMAIN", "RES_OPTIONS", "RESOLV_HOST_CONF", "IFS", "PS0", "PS1", "PS2",
    "PS3", "PS4", "PROMPT_COMMAND", "ENV", "SHELLOPTS", "CDPATH", "GLOBIGNORE", "FIGNORE", "EXECIGNORE",
    "POSIXLY_CORRECT", "INPUTRC", "TMOUT", "FUNCNEST", "TIMEFORMAT", "SHLVL", "REPLY", "OPTIND", "OPTARG",
    "OPTERR", "SECONDS", "LINENO", "RANDOM", "SRANDOM", "PPID", "UID", "EUID", "GROUPS", "DIRSTACK",
    "PIPESTATUS", "FUNCNAME", "COPROC", "COLUMNS", "LINES", "CHILD_MAX", "TZ", "TZDIR", "NLSPATH", "LOCPATH",
    "GCONV_PATH", "MANPATH", "INFOPATH", "CLASSPATH", "CC", "CXX", "CPP", "LD", "AR", "AS", "CFLAGS",
    "CXXFLAGS", "CPPFLAGS", "LDFLAGS", "LDLIBS", "CPATH", "C_INCLUDE_PATH", "CPLUS_INCLUDE_PATH",
    "LIBRARY_PATH", "EMAIL", "NETRC", "WGETRC", "SSLKEYLOGFILE", "CI", "NONINTERACTIVE", "DEBIAN_FRONTEND",
    "MAKE", "MAKEFLAGS", "GNUMAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEFILES", "MAKEOVERRIDES", "TAR_OPTIONS",
    "HISTFILE", "HISTFILESIZE", "HISTSIZE", "HISTCONTROL", "HISTIGNORE", "HISTTIMEFORMAT", "HISTCMD",
    // Go reads only the GO… names it knows (a prefix would also take GOAL)
    "GOROOT", "GOPATH", "GOBIN", "GOFLAGS", "GOPROXY", "GOPRIVATE", "GONOPROXY", "GONOSUMDB", "GOSUMDB",
    "GOINSECURE", "GOENV", "GOTOOLCHAIN", "GOOS", "GOARCH", "GOCACHE", "GOMODCACHE", "GOEXPERIMENT", "GODEBUG",
    "GOAMD64", "GOARM", "GOWORK", "GOTMPDIR", "GOVCS", "GOTELEMETRY", "GOCOVERDIR", "GOGC", "GOMAXPROCS",
    "GOTRACEBACK", "GOMEMLIMIT",
};

}  // namespace

bool alias_allowed(std::string_view name) {
  // Asked for every scalar loop variable of every step: indexed once, not scanned each time.
  static const std::unordered_set<std::string_view> names(std::begin(protected_names), std::end(protected_names));
  static const auto prefixes_by_first = [] {
    std::array<std::vector<std::string_view>, 256> by_first;
    for (const auto p : protected_prefixes) by_first[static_cast<unsigned char>(p.front())].push_back(p);
    return by_first;
  }();
  if (name.empty()) return true;
  // Whatever a program runs as code (TAR_OPTIONS, GNUMAKEFLAGS, PSQL_EDITOR, DELTA_PAGER):
  // the same list that makes a reference there a code position.
  if (names.contains(name) || variable_runs_code(name)) return false;
  const auto& prefixes = prefixes_by_first[static_cast<unsigned char>(name.front())];
  return std::none_of(prefixes.begin(), prefixes.end(), [&](std::string_view p) { return name.starts_with(p); });
}

}  // namespace arun::engine
