"""An in-memory git object store for the GitHub stand-in: blobs, trees and commits under git's own SHA-1 object ids, and refs."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

TREE_MODE = "040000"
BLOB_MODES = ("100644", "100755", "120000")


class GitInvalid(ValueError):
    """A request that names a missing object or an impossible tree (GitHub answers 422)."""


@dataclass(frozen=True)
class Commit:
    tree: str
    parents: tuple[str, ...]
    message: str
    author: dict[str, str]
    committer: dict[str, str]


@dataclass
class GitStore:
    objects: dict[str, tuple[str, bytes]] = field(default_factory=dict)
    commits: dict[str, Commit] = field(default_factory=dict)
    trees: dict[str, list[tuple[str, str, str, str]]] = field(default_factory=dict)
    refs: dict[str, str] = field(default_factory=dict)

    def _store(self, kind: str, body: bytes) -> str:
        sha = hashlib.sha1(f"{kind} {len(body)}".encode() + b"\0" + body, usedforsecurity=False).hexdigest()
        self.objects[sha] = (kind, body)
        return sha

    def kind(self, sha: str) -> str | None:
        found = self.objects.get(sha)
        return found[0] if found else None

    def blob(self, content: bytes) -> str:
        return self._store("blob", content)

    def blob_content(self, sha: str) -> bytes:
        kind, body = self.objects[sha]
        assert kind == "blob"
        return body

    def tree(self, entries: list[dict[str, Any]]) -> str:
        """A tree from GitHub-style entries ({path, mode, type, sha}); paths with slashes make the trees between."""
        root: dict[str, Any] = {}
        for entry in entries:
            path, mode, kind, sha = entry.get("path"), entry.get("mode"), entry.get("type"), entry.get("sha")
            parts = str(path or "").split("/")
            if any(part in ("", ".", "..") for part in parts):
                raise GitInvalid(f"tree.path {path!r} is invalid")
            if kind == "blob" and mode not in BLOB_MODES or kind == "tree" and mode != TREE_MODE:
                raise GitInvalid(f"tree.mode {mode!r} does not fit tree.type {kind!r}")
            if self.kind(str(sha)) != kind:
                raise GitInvalid(f"tree.sha {sha} is not a valid {kind}")
            folder = root
            for part in parts[:-1]:
                folder = folder.setdefault(part, {})
                if not isinstance(folder, dict):
                    raise GitInvalid(f"tree.path {path!r} runs through a file")
            folder[parts[-1]] = (mode, kind, sha)
        return self._write_tree(root)

    def _write_tree(self, folder: dict[str, Any]) -> str:
        rows: list[tuple[str, str, str, str]] = []
        for name, item in folder.items():
            if isinstance(item, dict):
                rows.append((TREE_MODE, "tree", self._write_tree(item), name))
            else:
                mode, kind, sha = item
                rows.append((mode, kind, sha, name))
        # Git orders entries by name, a tree's name compared as if it ended in "/".
        rows.sort(key=lambda row: row[3].encode() + (b"/" if row[1] == "tree" else b""))
        body = b"".join(
            f"{mode.lstrip('0')} {name}".encode() + b"\0" + bytes.fromhex(sha) for mode, _, sha, name in rows
        )
        sha = self._store("tree", body)
        self.trees[sha] = rows
        return sha

    def walk(self, tree_sha: str, prefix: str = "") -> list[tuple[str, str, str, str]]:
        """Every entry under the tree, depth first, as (path, mode, type, sha)."""
        found = []
        for mode, kind, sha, name in self.trees[tree_sha]:
            path = f"{prefix}{name}"
            found.append((path, mode, kind, sha))
            if kind == "tree":
                found.extend(self.walk(sha, f"{path}/"))
        return found

    def commit(
        self, tree: str, parents: list[str], message: str, author: dict[str, str], committer: dict[str, str]
    ) -> str:
        if self.kind(tree) != "tree":
            raise GitInvalid(f"Tree SHA {tree} does not exist")
        for parent in parents:
            if self.kind(parent) != "commit":
                raise GitInvalid(f"Parent SHA {parent} does not exist")
        lines = [f"tree {tree}", *(f"parent {p}" for p in parents)]
        lines += [f"author {_signature(author)}", f"committer {_signature(committer)}", "", message]
        sha = self._store("commit", "\n".join(lines).encode())
        self.commits[sha] = Commit(tree, tuple(parents), message, dict(author), dict(committer))
        return sha

    def descends(self, commit_sha: str, ancestor: str) -> bool:
        seen, todo = set(), [commit_sha]
        while todo:
            current = todo.pop()
            if current == ancestor:
                return True
            if current not in seen:
                seen.add(current)
                todo.extend(self.commits[current].parents)
        return False

    def files(self, commit_sha: str) -> dict[str, bytes]:
        return {
            path: self.blob_content(sha)
            for path, _, kind, sha in self.walk(self.commits[commit_sha].tree)
            if kind == "blob"
        }


def _signature(person: dict[str, str]) -> str:
    return f"{person['name']} <{person['email']}> {person['unix']} +0000"
