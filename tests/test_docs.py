"""The docs cannot rot: README.md and every docs/*.md are checked against the code they describe.

For each page: every relative link (and #anchor) resolves; every repository path named in backticks exists; every
playbook an ansible-playbook command names exists; every tag named (`--tags`, `--skip-tags`, a table's `tag`
column) is one `ansible-playbook site.yml --list-tags` lists; every flag given to one of our commands (`python -m
validation`, `python -m lab`, `python -m tests.*`, `benchmarks/*.py`, `scripts/*`) or to ansible-playbook is one its
parser accepts (read from its `--help`, or a shell script's `case` patterns); every role variable named is declared in
a `roles/*/meta/argument_specs.yml` or an inventory; every command of a fenced shell block starts with a word that
resolves (a shell builtin, a command on PATH or in the project's venv, or a file of the repository); and the
threshold table of docs/handover.md holds the figures of inventories/common's acceptance.yml.

The checker is a set of functions over a page's text and a `Project` (what the repository holds); the same functions
judge the real pages and, in the negative cases below, synthetic pages with one defect each.
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
VENV_BIN = Path(sys.executable).parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

# Paths that exist only once something ran (the venv, results, the lab's run directory, caches, the collection).
GENERATED = ("results", ".venv", ".cache", "dist", "lab/.run")
# The example site of docs/deploying.md, which a reader creates: `cp -r inventories/production inventories/mysite`.
EXAMPLE_SEGMENTS = {"mysite"}
MAX_LINE = 120
SHELL_LANGS = {"sh", "bash", "shell", "console"}
SHELL_WORDS = {"cd", "export", "set", "for", "do", "done", "if", "then", "else", "fi", "while", "case", "esac",
               "echo", "source", ".", "test", "[", "exit", "true", "false", "unset", "wait", "kill"}
PREFIX_WORDS = {"sudo", "env", "time", "exec"}
# Names that are neither variables nor files: Ansible's own keywords and settings the pages mention.
ANSIBLE_WORDS = {"no_log", "run_once", "delegate_to", "host_key_checking", "tasks_from", "import_role",
                 "include_role", "roles_path", "ignore_errors"}


@dataclass(frozen=True)
class Command:
    """One simple command of a page: its words, where it was found, and whether it came from a shell block."""

    words: tuple[str, ...]
    where: str
    from_block: bool


@dataclass
class Project:
    """What the pages are checked against."""

    root: Path
    tags: frozenset[str]
    variables: dict[str, frozenset[str] | None]   # declared name -> its sub-keys (None: not known)
    known_words: frozenset[str]                     # names that are something else: modules, roles, functions, metrics
    thresholds: list[dict]
    _help: dict[tuple[str, ...], frozenset[str] | None] = field(default_factory=dict)

    # --- command-line flags, read from the commands themselves, once per command -----------------------------
    def flags(self, cli: tuple[str, ...]) -> frozenset[str] | None:
        """The flags `cli` accepts; None when it has no parser (then any flag is unknown)."""
        if cli not in self._help:
            self._help[cli] = self._read_flags(cli)
        return self._help[cli]

    def _read_flags(self, cli: tuple[str, ...]) -> frozenset[str] | None:
        kind, target, *sub = cli
        if kind == "shell":
            text = (self.root / target).read_text()
            return frozenset(f for pat in re.findall(r"^\s*([-\w|]+)\)", text, re.M) for f in pat.split("|")
                             if f.startswith("-")) | {"-h", "--help"}
        if kind == "ansible-playbook":
            args = [str(VENV_BIN / "ansible-playbook"), "--help"]
        else:
            source = self._python_source(kind, target)
            if source is None or "argparse" not in source.read_text():
                return None
            args = [sys.executable, *(["-m", target] if kind == "module" else [target]), *sub, "--help"]
        proc = subprocess.run(args, cwd=self.root, capture_output=True, text=True, timeout=120, check=False)
        if proc.returncode != 0:
            raise AssertionError(f"{' '.join(args)} exited {proc.returncode}: {proc.stderr[-500:]}")
        own = frozenset(re.findall(r"(?<![\w-])(--?[A-Za-z][\w-]*)", proc.stdout))
        return own | (self.flags((kind, target)) or frozenset()) if sub else own  # a subcommand: the global ones too

    def subcommands(self, kind: str, target: str) -> frozenset[str]:
        key = ("subcommands", kind, target)
        if key not in self._help:
            source = self._python_source(kind, target)
            names: frozenset[str] = frozenset()
            if source is not None and "add_subparsers" in source.read_text():
                args = [sys.executable, *(["-m", target] if kind == "module" else [target]), "--help"]
                out = subprocess.run(args, cwd=self.root, capture_output=True, text=True, timeout=120).stdout
                found = re.search(r"\{([\w,-]+)\}", out)
                names = frozenset(found.group(1).split(",")) if found else frozenset()
            self._help[key] = names
        return self._help[key] or frozenset()

    def _python_source(self, kind: str, target: str) -> Path | None:
        if kind == "script":
            return self.root / target
        base = self.root / target.replace(".", "/")
        for candidate in (base / "cli.py", base / "__main__.py", base.with_suffix(".py")):
            if candidate.is_file():
                return candidate
        return None


# --- reading a page ------------------------------------------------------------------------------------------

FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)


def split_page(text: str) -> tuple[str, list[tuple[str, str]]]:
    """The prose (fenced blocks blanked) and the fenced blocks as (language, body)."""
    blocks = [(m.group(1), m.group(2)) for m in FENCE.finditer(text)]
    return FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), text), blocks


def code_spans(prose: str) -> list[str]:
    return [s.strip() for s in re.findall(r"`([^`\n]+)`", prose)]


def slug(heading: str) -> str:
    """GitHub's anchor of a heading."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower().replace("`", ""))
    return text.replace(" ", "-")


def anchors(text: str) -> set[str]:
    return {slug(h) for h in re.findall(r"^#{1,6} (.+)$", split_page(text)[0], re.M)}


def shell_commands(body: str) -> Iterator[list[str]]:
    """Each simple command of a shell text: lines joined on `\\` and open quotes, split on ; && || |."""
    pending = ""
    for line in body.splitlines():
        pending = f"{pending}\n{line}" if pending else line
        if pending.endswith("\\"):
            pending = pending[:-1]
            continue
        try:
            lex = shlex.shlex(pending, posix=True, punctuation_chars=";&|")
            lex.whitespace_split = True
            tokens = list(lex)
        except ValueError:      # a quote still open: the command goes on on the next line
            continue
        pending = ""
        words: list[str] = []
        for token in tokens:
            if token and set(token) <= set(";&|"):
                if words:
                    yield words
                words = []
            else:
                words.append(token)
        if words:
            yield words


def page_commands(name: str, prose: str, blocks: list[tuple[str, str]]) -> list[Command]:
    commands = [Command(tuple(w), f"{name}: shell block: {' '.join(w)[:80]}", True)
                for lang, body in blocks if lang in SHELL_LANGS for w in shell_commands(body)]
    for span in code_spans(prose):
        try:
            for words in shell_commands(span):
                commands.append(Command(tuple(words), f"{name}: `{span[:80]}`", False))
        except ValueError:
            continue
    return commands


def strip_prefix(words: tuple[str, ...]) -> tuple[str, ...]:
    """Drop VAR=value assignments, sudo/env/time and `nice -n N` in front of the command itself."""
    w = list(words)
    while w:
        if re.match(r"^[A-Za-z_]\w*=", w[0]) or w[0] in PREFIX_WORDS:
            w.pop(0)
        elif w[0] == "nice":
            w = w[3:] if len(w) > 2 and w[1] == "-n" else w[1:]
        else:
            break
    return tuple(w)


def repo_relative(word: str) -> str:
    return word[2:] if word.startswith("./") else word


def cli_of(project: Project, words: tuple[str, ...]) -> tuple[tuple[str, ...], list[str]] | None:
    """Which of our commands (or ansible-playbook) `words` runs, and its arguments; None for any other command."""
    if not words:
        return None
    exe, rest = words[0], list(words[1:])
    if Path(exe).name in ("python", "python3"):
        if len(rest) >= 2 and rest[0] == "-m":
            module, args = rest[1], rest[2:]
            if project._python_source("module", module) is None:
                return None
            subs = project.subcommands("module", module)
            positional = [a for a in args if not a.startswith(("-", "["))]
            sub = positional[0] if positional and positional[0] in subs else None
            return (("module", module, sub) if sub else ("module", module)), args
        if rest and rest[0].endswith(".py") and (project.root / repo_relative(rest[0])).is_file():
            return ("script", repo_relative(rest[0])), rest[1:]
        return None
    path = repo_relative(exe)
    if path.startswith(("scripts/", "benchmarks/")) and path.endswith((".py", ".sh")) and \
            (project.root / path).is_file():
        return (("script", path) if path.endswith(".py") else ("shell", path)), rest
    if Path(exe).name == "ansible-playbook":
        return ("ansible-playbook", "ansible-playbook"), rest
    return None


def flag_words(args: list[str]) -> Iterator[str]:
    for arg in args:
        if arg == "--":
            return
        arg = arg.lstrip("[").rstrip("]")
        if re.match(r"^--?[A-Za-z]", arg):
            yield arg.split("=", 1)[0]


def option_values(args: list[str], names: tuple[str, ...]) -> Iterator[str]:
    for i, arg in enumerate(args):
        for name in names:
            if arg == name and i + 1 < len(args):
                yield from args[i + 1].split(",")
            elif arg.startswith(name + "="):
                yield from arg.split("=", 1)[1].split(",")


# --- the checks ----------------------------------------------------------------------------------------------

def check_links(page: Path, text: str) -> list[str]:
    problems = []
    for target in re.findall(r"\]\(([^)\s]+)\)", split_page(text)[0]):
        if re.match(r"^[a-z]+:", target):
            continue
        file_part, _, anchor = target.partition("#")
        dest = (page.parent / file_part).resolve() if file_part else page
        if not dest.exists():
            problems.append(f"{page.name}: link to {target}: {file_part} does not exist")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest.read_text()):
            problems.append(f"{page.name}: link to {target}: no heading #{anchor} in {dest.name}")
    return problems


def path_candidate(project: Project, word: str) -> str | None:
    """The repository path `word` names, or None when it names none (or only an example or generated one)."""
    word = repo_relative(word.rstrip(".,;:"))
    if not re.match(r"^[\w.][\w./-]*$", word) or word.startswith("../"):
        return None
    top = word.split("/", 1)[0]
    tracked_top = (project.root / top).exists() and (top in TRACKED_TOP or top == word)
    if "/" not in word and not (tracked_top and "." in word):
        return None
    if not tracked_top or any(word == g or word.startswith(g + "/") for g in GENERATED):
        return None
    if EXAMPLE_SEGMENTS & set(word.split("/")):
        return None
    return word


def check_paths(project: Project, name: str, prose: str, commands: list[Command]) -> list[str]:
    words = code_spans(prose) + [w for c in commands for w in c.words]
    return sorted({f"{name}: `{w}` names a path that does not exist" for w in words
                   if (p := path_candidate(project, w)) and not (project.root / p).exists()})


def check_commands(project: Project, commands: list[Command]) -> list[str]:
    problems = []
    for command in commands:
        words = strip_prefix(command.words)
        if command.from_block and words and not word_resolves(project, words[0]):
            problems.append(f"{command.where}: `{words[0]}` is neither a shell word, nor on PATH or in the venv, "
                            "nor a file of the repository")
        found = cli_of(project, words)
        if found is None:
            continue
        cli, args = found
        accepted = project.flags(cli)
        for flag in flag_words(args):
            if accepted is None or not (flag in accepted or re.sub(r"^-(\w)\1+$", r"-\1", flag) in accepted):
                problems.append(f"{command.where}: {flag} is not a flag of {' '.join(c for c in cli[1:] if c)}")
        if cli[0] == "ansible-playbook":
            for tag in option_values(args, ("--tags", "--skip-tags", "-t")):
                if tag not in project.tags:
                    problems.append(f"{command.where}: tag {tag!r} is not in site.yml --list-tags")
            for book in (a for a in args if a.endswith(".yml") and not a.startswith(("-", "@"))):
                if path_candidate(project, book) and not (project.root / repo_relative(book)).is_file():
                    problems.append(f"{command.where}: playbook {book} does not exist")
        problems += [f"{command.where}: -e {v} sets an undeclared variable"
                     for v in option_values(args, ("-e", "--extra-vars"))
                     if "=" in v and not variable_known(project, v.split("=", 1)[0])]
    return problems


def word_resolves(project: Project, word: str) -> bool:
    if word in SHELL_WORDS or shutil.which(word) or (VENV_BIN / word).exists():
        return True
    return "/" in word and (project.root / repo_relative(word)).exists()


def check_tag_tables(project: Project, name: str, prose: str) -> list[str]:
    problems = []
    for table in re.findall(r"((?:^\|.*\|\n)+)", prose, re.M):
        rows = [[c.strip() for c in r.strip("|").split("|")] for r in table.strip().splitlines()]
        if "tag" not in rows[0]:
            continue
        col = rows[0].index("tag")
        for row in rows[2:]:
            problems += [f"{name}: tag table: {tag!r} is not in site.yml --list-tags"
                         for tag in re.findall(r"`([^`]+)`", row[col]) if tag not in project.tags]
    return problems


FILE_SUFFIXES = {"yml", "yaml", "py", "md", "j2", "json", "txt", "cfg", "sh", "log", "html", "xml", "prom"}
VARIABLE = re.compile(r"^([a-z][a-z0-9]*(?:_[a-z0-9]+)+)((?:\.[a-z_][a-z0-9_]*)*)(?::\s.*|=.*)?$")


def variable_known(project: Project, dotted: str) -> bool:
    head, *subs = dotted.split(".")
    if head not in project.variables:
        return False
    keys = project.variables[head]
    return not subs or keys is None or subs[0] in keys


def check_variables(project: Project, name: str, prose: str) -> list[str]:
    """A snake_case name in backticks with a variable's prefix is a variable unless it names something else
    (`ansible_*`: Ansible's own connection variables and facts)."""
    prefixes = {v.split("_", 1)[0] for v in project.variables}
    problems = set()
    for span in code_spans(prose):
        m = VARIABLE.match(span)
        if not m or m.group(1) in project.known_words or m.group(1).startswith("ansible_") or m.group(1).split("_", 1)[0] not in prefixes \
                or m.group(2).rsplit(".", 1)[-1] in FILE_SUFFIXES:
            continue
        if not variable_known(project, m.group(1) + m.group(2)):
            problems.add(f"{name}: `{span}`: no argument spec or inventory declares {m.group(1) + m.group(2)}")
    return sorted(problems)


THRESHOLD_ROW = re.compile(r"^\| `(\w+)` \| ([^|]*) \| ([^|]*) \| ([^|]*) \|", re.M)


def check_thresholds(project: Project, name: str, prose: str) -> list[str]:
    """Rows `| \\`metric\\` | floor | F x \\`derive\\` | F x \\`derive\\` | source |` against the inventory's."""
    by_metric = {t["metric"]: t for t in project.thresholds}
    problems = []
    for row in THRESHOLD_ROW.findall(prose):
        metric, *cells = (c.strip() for c in row)
        if metric not in by_metric:
            continue
        t = by_metric[metric]
        want = [str(t.get("floor", "-")),
                *(f"{t[k]['fraction']} x `{t[k]['derive']}`" if k in t else "-" for k in ("ceiling", "measured"))]
        if cells != want:
            problems.append(f"{name}: threshold row {metric}: {cells} but acceptance.yml has {want}")
    return problems


def check_line_lengths(name: str, prose: str) -> list[str]:
    """Prose lines at most 120 characters (tables and code blocks may be wider)."""
    return [f"{name}:{n}: {len(line)} characters (at most {MAX_LINE} outside tables and code)"
            for n, line in enumerate(prose.splitlines(), 1) if len(line) > MAX_LINE and not line.startswith("|")]


def check_page(project: Project, page: Path) -> list[str]:
    text = page.read_text()
    name = str(page.relative_to(project.root)) if page.is_relative_to(project.root) else page.name
    prose, blocks = split_page(text)
    commands = page_commands(name, prose, blocks)
    return (check_links(page, text) + check_paths(project, name, prose, commands)
            + check_commands(project, commands) + check_tag_tables(project, name, prose)
            + check_variables(project, name, prose) + check_thresholds(project, name, prose)
            + check_line_lengths(name, prose))


# --- what the repository holds -------------------------------------------------------------------------------

TRACKED_TOP = {p.name for p in ROOT.iterdir() if p.name not in {".git", ".venv", ".cache", "results", "dist"}}


def list_tags(root: Path) -> frozenset[str]:
    proc = subprocess.run([str(VENV_BIN / "ansible-playbook"), "site.yml", "--list-tags"], cwd=root,
                          capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout[-1000:] + proc.stderr[-1000:]
    return frozenset(t.strip() for group in re.findall(r"TAGS: \[([^\]]*)\]", proc.stdout)
                     for t in group.split(",") if t.strip())


def _keys(value: object) -> frozenset[str] | None:
    return frozenset(value) if isinstance(value, dict) else None


def declared_variables(root: Path) -> dict[str, frozenset[str] | None]:
    declared: dict[str, set[str] | None] = {}

    def add(name: str, subs: frozenset[str] | None) -> None:
        if name not in declared or declared[name] is None:
            declared[name] = set(subs) if subs is not None else declared.get(name)
        elif subs is not None:
            declared[name] |= subs  # type: ignore[operator]

    for spec in root.glob("roles/*/meta/argument_specs.yml"):
        for entry in (yaml.safe_load(spec.read_text()).get("argument_specs") or {}).values():
            for option, body in (entry.get("options") or {}).items():
                add(option, _keys(body.get("options") or body.get("suboptions")))
    for vars_file in root.glob("inventories/*/group_vars/all/*.yml"):
        for key, value in (yaml.safe_load(vars_file.read_text()) or {}).items():
            add(key, _keys(value))
    for hosts in root.glob("inventories/*/hosts.yml"):
        for host_vars in _host_var_maps(yaml.safe_load(hosts.read_text())):
            for key, value in host_vars.items():
                add(key, _keys(value))
    return {k: (frozenset(v) if v is not None else None) for k, v in declared.items()}


def _host_var_maps(group: object) -> Iterator[dict]:
    if not isinstance(group, dict):
        return
    for key, value in group.items():
        if key == "hosts" and isinstance(value, dict):
            yield from (v for v in value.values() if isinstance(v, dict))
        elif key == "vars" and isinstance(value, dict):
            yield value
        else:
            yield from _host_var_maps(value)


def known_words(root: Path) -> frozenset[str]:
    """Names the pages use that are not variables: modules, plugins, roles, Python names, metrics, derive names."""
    words = set(ANSIBLE_WORDS)
    words |= {p.name for p in (root / "roles").iterdir()}
    words |= {p.stem for d in ("library", "module_utils", "plugins/action", "plugins/callback", "validation",
                               "validation/runners", "validation/stages", "lab", "benchmarks", "scripts")
              for p in (root / d).glob("*.py")}
    for source in root.glob("*/**/*.py"):
        if ".venv" not in source.parts:
            words |= set(re.findall(r"^\s*(?:def|class) (\w+)", source.read_text(errors="replace"), re.M))
    words |= set(yaml.safe_load((root / "validation/metrics.yml").read_text())["metrics"])
    prom = (root / "validation/prom.py").read_text()   # the Prometheus families the report writes
    prefix = re.search(r'^PREFIX = "(\w+)"', prom, re.M)
    if prefix:
        words |= {f"{prefix.group(1)}_{name}" for name in re.findall(r"\{PREFIX\}_(\w+)", prom)}
    # Values the inventories give (derive names, modes): a page quoting one names a value, not a variable.
    for vars_file in root.glob("inventories/*/group_vars/all/*.yml"):
        words |= set(re.findall(r":\s*([a-z][a-z0-9_]*)\b", vars_file.read_text()))
    return frozenset(words)


@pytest.fixture(scope="session")
def project() -> Project:
    thresholds = yaml.safe_load((ROOT / "inventories/common/group_vars/all/acceptance.yml").read_text())
    return Project(ROOT, list_tags(ROOT), declared_variables(ROOT), known_words(ROOT),
                   thresholds["acceptance_thresholds"])


# --- the real pages ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_page_matches_the_code(project, page):
    problems = check_page(project, page)
    assert not problems, "\n".join(problems)


def test_readme_is_short():
    lines = (ROOT / "README.md").read_text().count("\n")
    assert lines <= 160, f"README.md has {lines} lines: the details belong in docs/"


def test_every_doc_page_is_in_the_readme_map():
    readme = (ROOT / "README.md").read_text()
    unlinked = [p.name for p in PAGES[1:] if p.suffix == ".md" and f"(docs/{p.name})" not in readme]
    assert not unlinked, f"README.md's documentation map does not link: {unlinked}"


def test_handover_has_a_row_for_every_threshold(project):
    rows = {row[0] for row in THRESHOLD_ROW.findall((ROOT / "docs/handover.md").read_text())}
    missing = [t["metric"] for t in project.thresholds if t["metric"] not in rows]
    assert not missing, f"docs/handover.md's threshold table has no row for {missing}"


def test_the_checks_see_the_real_pages(project):
    """The checker reads what matters: the real pages give it commands, paths, tags, flags and variables."""
    text = "\n".join(p.read_text() for p in PAGES)
    prose, blocks = split_page(text)
    commands = page_commands("all", prose, blocks)
    assert sum(1 for c in commands if cli_of(project, strip_prefix(c.words))) > 20
    assert sum(1 for c in commands if c.from_block) > 20
    assert {"preflight", "validate", "storage"} <= project.tags
    assert "powerscale_api_host" in project.variables and "validation_nccl" in project.variables
    assert project.flags(("module", "validation", "evaluate")) >= {"--set", "--inventory", "--thresholds"}
    assert project.flags(("module", "lab", "up")) >= {"--dgx", "--accel"}


# --- each kind of defect fails the checker ---------------------------------------------------------------------

def _page(tmp_path: Path, body: str) -> Path:
    page = tmp_path / "page.md"
    page.write_text("# A page\n\n## Known heading\n\n" + body + "\n")
    (tmp_path / "other.md").write_text("# Other\n\n## Its section\n")
    return page


GOOD = """See [the other page](other.md#its-section) and [this one](#known-heading), `roles/powerscale/README.md`,
`powerscale_api_host`, `validation_nccl.gpus_per_process` and `-e preflight_offline=true`.

```sh
.venv/bin/ansible-playbook -i inventories/common -i inventories/mysite playbooks/storage.yml --tags storage --check
.venv/bin/python -m validation evaluate results/20261127T101500Z --set fio_node_read_MBps.floor=6000
.venv/bin/python -m lab up --dgx 2
.venv/bin/python benchmarks/first_run_bench.py --cold
./scripts/install.sh --lab --dev
```
"""


def test_a_good_page_passes(project, tmp_path):
    assert check_page(project, _page(tmp_path, GOOD)) == []


@pytest.mark.parametrize("defect, body, expected", [
    ("broken link", "[gone](missing.md)", "missing.md does not exist"),
    ("broken anchor", "[gone](other.md#no-such-section)", "no heading #no-such-section"),
    ("missing path", "`roles/powerscale/tasks/no_such_file.yml`", "names a path that does not exist"),
    ("missing playbook", "```sh\n.venv/bin/ansible-playbook playbooks/nothing.yml\n```",
     "does not exist"),
    ("unknown tag", "```sh\n.venv/bin/ansible-playbook site.yml --tags storrage\n```", "tag 'storrage'"),
    ("unknown tag in a table", "| stage | tag |\n|---|---|\n| storage | `storrage` |", "tag table: 'storrage'"),
    ("unknown flag of python -m validation", "`python -m validation evaluate results/x --sett a.floor=1`",
     "--sett is not a flag of validation evaluate"),
    ("unknown flag of python -m lab", "```sh\n.venv/bin/python -m lab up --dgxx 2\n```", "--dgxx is not a flag"),
    ("unknown flag of a benchmark", "`benchmarks/first_run_bench.py --colder`", "--colder is not a flag"),
    ("unknown flag of a script", "```sh\n./scripts/install.sh --lab --gpu\n```", "--gpu is not a flag"),
    ("unknown flag of ansible-playbook", "`ansible-playbook site.yml --chek`", "--chek is not a flag"),
    ("unknown variable", "set `powerscale_api_hots` to the node", "declares powerscale_api_hots"),
    ("unknown sub-key", "`validation_nccl.gpus_per_proces`", "declares validation_nccl.gpus_per_proces"),
    ("unknown extra variable", "`ansible-playbook site.yml -e preflight_ofline=true`", "undeclared variable"),
    ("command that does not resolve", "```sh\nno-such-command --now\n```", "`no-such-command` is neither"),
    ("prose line too long", "word " * 30, "characters (at most 120"),
    ("venv command that does not resolve", "```sh\n.venv/bin/no-such-tool\n```", "is neither"),
])
def test_a_defect_fails_the_checker(project, tmp_path, defect, body, expected):
    problems = check_page(project, _page(tmp_path, body))
    assert any(expected in p for p in problems), f"{defect}: not reported; the checker said {problems}"


def test_a_threshold_row_that_disagrees_fails(project, tmp_path):
    row = "| metric | floor | ceiling | measured | source |\n|---|---|---|---|---|\n"
    row += "| `nccl_single_node_busbw_gbps` | 200 | - | - | s |"
    assert any("threshold row nccl_single_node_busbw_gbps" in p for p in check_page(project, _page(tmp_path, row)))
