"""The handover document: who it is for and who signs it (validate_report_handover), and report.html rendered
from a jinja2 template a site can replace (validate_report_template / ``--template``).

Template lookup: a site's template directory (or the directory of a site's template file) first, then the
bundled templates (validation/templates/). The entry template is ``report.html.j2`` (or the file named); the
bundled ones are also reachable as ``default/<name>``, so a site template can ``{% extends
"default/report.html.j2" %}`` and replace only the blocks it wants (logo, cover, signoff, style, ...).
Undefined variables are errors (a misspelt name must not print as an empty field of a signed document).
"""

from __future__ import annotations

import base64
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import jinja2

TEMPLATES = Path(__file__).resolve().parent / "templates"
ENTRY = "report.html.j2"
VARIABLE = "validate_report_handover"
LOGO_MAX_BYTES = 1 << 20
LOGO_TYPES = {".svg": "image/svg+xml", ".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg",
              ".gif": "image/gif", ".webp": "image/webp"}


class HandoverError(ValueError):
    """Bad handover data or template; the message names the variable, the value and the fix."""


@dataclass(frozen=True)
class Signoff:
    role: str = ""
    name: str = ""
    date: str = ""


@dataclass(frozen=True)
class Handover:
    customer: str = ""
    logo: str = ""                                   # absolute path of the site's logo; empty: the bundled one
    signoff: tuple[Signoff, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, Any]:
        return {"customer": self.customer, "logo": self.logo, "signoff": [asdict(s) for s in self.signoff]}


def _text(value: Any, where: str) -> str:
    if value is None:
        return ""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise HandoverError(f"{where}={value!r}: not a text (fix: give a string, or leave it empty for a blank line)")
    return str(value).strip()


def handover_from(doc: Any, where: str = VARIABLE) -> Handover:
    """Handover data from its mapping (the role's validate_report_handover, or handover.json)."""
    if doc is None:
        return Handover()
    if not isinstance(doc, dict):
        raise HandoverError(f"{where}={doc!r}: not a mapping (fix: {{customer: ..., logo: ..., signoff: [...]}})")
    unknown = sorted(set(doc) - {"customer", "logo", "signoff"})
    if unknown:
        raise HandoverError(f"{where}: unknown key(s) {', '.join(unknown)} (fix: only customer, logo, signoff)")
    logo = _text(doc.get("logo"), f"{where}.logo")
    if logo and not Path(logo).is_absolute():
        raise HandoverError(f"{where}.logo={logo!r}: not an absolute path "
                            "(fix: e.g. \"{{ inventory_dir }}/files/logo.png\")")
    entries = doc.get("signoff") or []
    if not isinstance(entries, list):
        raise HandoverError(f"{where}.signoff={entries!r}: not a list (fix: a list of {{role, name, date}})")
    signoff = []
    for i, entry in enumerate(entries):
        here = f"{where}.signoff[{i}]"
        if not isinstance(entry, dict):
            raise HandoverError(f"{here}={entry!r}: not a mapping (fix: {{role: ..., name: ..., date: ...}})")
        extra = sorted(set(entry) - {"role", "name", "date"})
        if extra:
            raise HandoverError(f"{here}: unknown key(s) {', '.join(extra)} (fix: only role, name, date)")
        signoff.append(Signoff(**{k: _text(entry.get(k), f"{here}.{k}") for k in ("role", "name", "date")}))
    return Handover(customer=_text(doc.get("customer"), f"{where}.customer"), logo=logo, signoff=tuple(signoff))


def load_handover(path: Path) -> Handover:
    """handover.json of a run directory (the role writes it); a run without one gets blank lines to sign."""
    import json

    if not path.is_file():
        return Handover()
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise HandoverError(f"{path}: unreadable ({exc}) (fix: rewrite it from {VARIABLE}, or remove it)") from None
    return handover_from(doc, f"{VARIABLE} ({path})")


def logo_data_uri(logo: str) -> str:
    """The logo as a data: URI (the report stays one self-contained file); the bundled logo when none given."""
    path = Path(logo) if logo else TEMPLATES / "logo.svg"
    mime = LOGO_TYPES.get(path.suffix.lower())
    where = f"{VARIABLE}.logo={logo!r}"
    if mime is None:
        raise HandoverError(f"{where}: unsupported image type (fix: one of {', '.join(sorted(LOGO_TYPES))})")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise HandoverError(f"{where}: cannot be read ({exc.strerror}) (fix: the path of an image on the "
                            "control node)") from None
    if not data or len(data) > LOGO_MAX_BYTES:
        raise HandoverError(f"{where}: {len(data)} bytes (fix: an image of 1 to {LOGO_MAX_BYTES} bytes)")
    return f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"


def environment(template: Path | None) -> tuple[jinja2.Environment, str]:
    """The jinja2 environment for a site's template (a directory or a file; None: the bundled one) and the
    name of the entry template."""
    bundled = jinja2.FileSystemLoader(str(TEMPLATES))
    loaders: list[jinja2.BaseLoader] = []
    entry = ENTRY
    if template is not None:
        where = f"validate_report_template (--template) = {str(template)!r}"
        if template.is_dir():
            if not (template / ENTRY).is_file():
                raise HandoverError(f"{where}: the directory has no {ENTRY} (fix: add one; it may "
                                    f"{{% extends \"default/{ENTRY}\" %}})")
            loaders.append(jinja2.FileSystemLoader(str(template)))
        elif template.is_file():
            loaders.append(jinja2.FileSystemLoader(str(template.parent)))
            entry = template.name
        else:
            raise HandoverError(f"{where}: no such file or directory (fix: the path of a template directory "
                                f"holding {ENTRY}, or of one template file; empty for the bundled one)")
    loaders += [bundled, jinja2.PrefixLoader({"default": bundled})]
    env = jinja2.Environment(loader=jinja2.ChoiceLoader(loaders), autoescape=True, undefined=jinja2.StrictUndefined,
                             trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
    return env, entry


def render(view: dict[str, Any], template: Path | None = None) -> str:
    """report.html from the view (report.html_view) and the template; a template that fails names its file
    and line."""
    env, entry = environment(template)
    try:
        return env.get_template(entry).render(**view)
    except jinja2.TemplateSyntaxError as exc:
        raise HandoverError(f"template {exc.filename or exc.name}:{exc.lineno}: {exc.message} "
                            "(fix: the template's syntax)") from None
    except jinja2.TemplateError as exc:
        raise HandoverError(f"template {template or TEMPLATES / ENTRY}: {type(exc).__name__}: {exc} "
                            "(fix: use only the variables of the bundled template's header)") from None
