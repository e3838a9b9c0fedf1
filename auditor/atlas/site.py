"""The atlas's static site, from its database alone: page name -> text (pure, but for the reads).

* `index.html`: per engine release (emulated or its own code), the types down and the releases
  across, each cell coloured by the verdict; the grid travels as one compact JSON inside the page
  (a character per cell), which atlas.js draws and filters, so the page stays small whatever the
  grid's size (benchmarks/atlas_weight.py measures it);
* `types/TYPE.html`: a type's history per engine: its verdict in each release, where it changed
  (the gate, cause, fault, config drift and the command that sweeps it again), and the first
  release that broke it and the one that fixed it (the `first_broken` view);
* `releases/RELEASE.html`: what the release changed per engine, with the change model's counts
  (the line every report of that night prints), the types it lost, gained and moved, and its new
  types;
* `atlas.js`, `atlas.css`, `search.js`: the shared script and style, and the search box's names.

Every page opens from the file system (no server, no fetch of local files: data is embedded, or
loaded with <script src>) and from any static host.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from dataclasses import dataclass, field

from auditor.report.templating import environment, template_dirs

CELL = {"servable": "S", "stops": "X", "undecided": "U"}  # one character per cell in the index's JSON
ABSENT = "."


@dataclass(frozen=True)
class Track:
    """One engine release the verdicts answer for: `vLLM 0.34.0 (emulated)`."""

    engine: str
    title: str
    release: str
    emulated: bool

    @property
    def label(self) -> str:
        return f"{self.title} {self.release} ({'emulated' if self.emulated else 'own code'})"

    @property
    def ident(self) -> tuple:
        return (self.engine, self.release, self.emulated)


@dataclass(frozen=True)
class ReleaseColumn:
    env_id: str
    transformers: str
    torch: str
    python: str
    engines: str
    slug: str
    label: str


@dataclass(frozen=True)
class Atlas:
    """What the pages show, read from the database once."""

    tracks: tuple[Track, ...]
    columns: tuple[ReleaseColumn, ...]
    types: tuple[str, ...]
    verdicts: dict = field(default_factory=dict)  # (track ident, env_id, type) -> row dict
    changes: dict = field(default_factory=dict)  # type -> [change dicts]; "" -> every change
    counts: dict = field(default_factory=dict)  # env_id -> [release_changes dicts]
    first: dict = field(default_factory=dict)  # (type, track ident) -> first_broken dict
    runs: int = 0


def read_atlas(connection) -> Atlas:
    tracks = tuple(Track(*row) for row in connection.execute(
        "SELECT DISTINCT engine, title, engine_release, emulated FROM engine_verdicts "
        "ORDER BY engine DESC, emulated, engine_release").fetchall())
    envs = connection.execute(
        "SELECT env_id, transformers, torch, python, engines FROM environments WHERE env_id IN "
        "(SELECT env_id FROM engine_verdicts) ORDER BY release_order, torch, python, engines").fetchall()
    per_release = defaultdict(int)
    for env in envs:
        per_release[env[1]] += 1
    columns = tuple(ReleaseColumn(*env, slug=_slug(env[1] if per_release[env[1]] == 1 else env[0]),
                           label=env[1] if per_release[env[1]] == 1 else env[0]) for env in envs)
    verdicts = {}
    for row in _dicts(connection, "SELECT * FROM engine_verdicts ORDER BY lineage"):
        verdicts[((row["engine"], row["engine_release"], row["emulated"]), row["env_id"], row["model_type"])] = row
    changes = defaultdict(list)
    for row in _dicts(connection, "SELECT c.*, e.transformers FROM changes c JOIN environments e USING (env_id) "
                                  "ORDER BY e.release_order, c.engine DESC, c.kind, c.model_type"):
        changes[row["model_type"]].append(row)
        changes[""].append(row)
    counts = defaultdict(list)
    for row in _dicts(connection, "SELECT * FROM release_changes ORDER BY engine DESC, emulated"):
        counts[row["env_id"]].append(row)
    first = {(row["model_type"], (row["engine"], row["engine_release"], row["emulated"])): row
             for row in _dicts(connection, "SELECT * FROM first_broken")}
    types = tuple(sorted({key[2] for key in verdicts}))
    runs = connection.execute("SELECT count(*) FROM runs").fetchone()[0]
    return Atlas(tracks, columns, types, verdicts, dict(changes), dict(counts), first, runs)


def _dicts(connection, sql: str) -> list[dict]:
    cursor = connection.execute(sql)
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._+-]+", "-", text).strip("-") or "release"


def render_site(connection) -> dict[str, str]:
    """Every page of the site of the atlas in `connection`."""
    return render_pages(read_atlas(connection))


def render_pages(atlas: Atlas) -> dict[str, str]:
    env = environment()
    pages = {"index.html": env.get_template("atlas_index.html.j2").render(
        root="", atlas=atlas, grid=json.dumps(index_data(atlas), separators=(",", ":")).replace("</", "<\\/"))}
    by_env = {c.env_id: c for c in atlas.columns}
    slugs = {}
    for c in atlas.columns:
        slugs.setdefault(c.transformers, c.slug)
    for model_type in atlas.types:
        pages[f"types/{model_type}.html"] = env.get_template("atlas_type.html.j2").render(
            root="../", atlas=atlas, model_type=model_type, history=type_history(atlas, model_type),
            by_env=by_env, slugs=slugs)
    for column in atlas.columns:
        pages[f"releases/{column.slug}.html"] = env.get_template("atlas_release.html.j2").render(
            root="../", atlas=atlas, column=column, engines=release_changes(atlas, column), by_env=by_env)
    search = {"types": list(atlas.types), "releases": [[c.label, c.slug] for c in atlas.columns]}
    pages["search.js"] = "window.ATLAS_SEARCH=" + json.dumps(search, separators=(",", ":")) + ";\n"
    for name in ("atlas.js", "atlas.css"):
        pages[name] = (template_dirs()[0] / name).read_text(encoding="utf-8")
    return pages


def index_data(atlas: Atlas) -> dict:
    """The index's grid: per track, its columns and a string per type, a character per column."""
    tracks = []
    for track in atlas.tracks:
        columns = [c for c in atlas.columns
                   if any((track.ident, c.env_id, t) in atlas.verdicts for t in atlas.types)]
        rows = []
        for model_type in atlas.types:
            cells = "".join(CELL.get(atlas.verdicts[(track.ident, c.env_id, model_type)]["verdict"], ABSENT)
                            if (track.ident, c.env_id, model_type) in atlas.verdicts else ABSENT for c in columns)
            rows.append(cells)
        tracks.append({"label": track.label, "cols": [[c.label, c.slug] for c in columns], "rows": rows})
    return {"types": list(atlas.types), "tracks": tracks}


@dataclass(frozen=True)
class TrackHistory:
    track: Track
    cells: tuple[tuple[ReleaseColumn, dict], ...]  # the releases that have a verdict of it, with the verdict
    changes: tuple[dict, ...]  # the change rows of this type and engine release, oldest first
    first: dict | None  # its first_broken row


def type_history(atlas: Atlas, model_type: str) -> list[TrackHistory]:
    found = []
    for track in atlas.tracks:
        cells = tuple((c, atlas.verdicts[(track.ident, c.env_id, model_type)]) for c in atlas.columns
                      if (track.ident, c.env_id, model_type) in atlas.verdicts)
        if not cells:
            continue
        changes = tuple(c for c in atlas.changes.get(model_type, ())
                        if (c["engine"], c["engine_release"], c["emulated"]) == track.ident)
        found.append(TrackHistory(track, cells, changes, atlas.first.get((model_type, track.ident))))
    return found


@dataclass(frozen=True)
class ReleaseEngine:
    counts: dict  # its release_changes row
    changes: tuple[dict, ...]


def release_changes(atlas: Atlas, column: ReleaseColumn) -> list[ReleaseEngine]:
    every = [c for c in atlas.changes.get("", ()) if c["env_id"] == column.env_id]
    return [ReleaseEngine(row, tuple(c for c in every if (c["engine"], c["engine_release"], c["emulated"])
                                     == (row["engine"], row["engine_release"], row["emulated"])
                                     and c["lineage"] == row["lineage"]))
            for row in atlas.counts.get(column.env_id, ())]
