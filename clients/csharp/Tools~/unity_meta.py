#!/usr/bin/env python3
"""Write, or check, the Unity .meta files of the package com.quantcodec.client (clients/csharp).

Why they are committed: a package added by git URL (or from a registry) is immutable: Unity copies
it into Library/PackageCache and writes no .meta into it; an asset without one is ignored ("Asset
Packages/<name>/<file> has no meta file, but it's in an immutable folder. The asset will be
ignored."), so with no .meta the asmdef and its scripts would not be compiled at all. Unity's own
package validation (Meta Files Validation) asks for one .meta per file and folder it imports.

What Unity imports, and so what gets a .meta: every file and folder of the package except hidden
ones (name starting with "."), those whose name ends in "~" (Tests~, Bench~, Tools~, build~: the
importer skips them and everything under them), folders named "cvs" and files ending in ".tmp".
No .meta may sit in a skipped place, and none may lack its asset.

The GUIDs: md5("com.quantcodec.client:" + the asset's path relative to the package root, "/"
separated, no trailing "/") in lowercase hex. Deterministic, so that every clone and every run
writes the same ones; Unity references an asset (a script, the asmdef) by its GUID, so a published
file's GUID must never change: do not change this rule. (A renamed or moved file is a new asset
with a new GUID, as Unity would also give it if the .meta did not move with it.)

The importer blocks are those Unity 2021.3 writes (compare any package Unity made, e.g.
com.unity.test-framework's): folders DefaultImporter with folderAsset: yes, .cs MonoImporter,
.asmdef AssemblyDefinitionImporter, the package's own package.json PackageManifestImporter, text
assets (.txt .md .json .xml ...) TextScriptImporter, anything else DefaultImporter.

Usage (Python 3, no dependency):
    python3 'clients/csharp/Tools~/unity_meta.py'            # write missing/wrong ones, delete stale ones
    python3 'clients/csharp/Tools~/unity_meta.py' --check    # change nothing; exit 1 listing every problem
Run it after adding, renaming or removing a file or folder Unity imports, and commit the .meta
files with the change (run-tests runs --check).
"""
import hashlib
import os
import sys

PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GUID_PREFIX = "com.quantcodec.client:"

# Unity's TextScriptImporter extensions (a TextAsset), .md included
TEXT = {".txt", ".md", ".json", ".xml", ".html", ".htm", ".bytes", ".csv", ".yaml", ".fnt"}

TAIL = "  externalObjects: {}\n  userData: \n  assetBundleName: \n  assetBundleVariant: \n"
MONO = ("MonoImporter:\n  externalObjects: {}\n  serializedVersion: 2\n  defaultReferences: []\n"
        "  executionOrder: 0\n  icon: {instanceID: 0}\n  userData: \n  assetBundleName: \n"
        "  assetBundleVariant: \n")


def skipped(name, is_dir):
    """Whether Unity's importer skips this file or folder name (and, for a folder, all under it)."""
    if name.startswith(".") or name.endswith("~"):
        return True
    if is_dir:
        return name.lower() == "cvs"
    return name.lower().endswith(".tmp")


def guid(rel):
    return hashlib.md5((GUID_PREFIX + rel).encode("utf-8")).hexdigest()


def importer(rel, is_dir):
    """The importer Unity 2021.3 gives the asset at rel."""
    if is_dir:
        return "DefaultImporter"
    ext = os.path.splitext(rel)[1].lower()
    if ext == ".cs":
        return "MonoImporter"
    if ext == ".asmdef":
        return "AssemblyDefinitionImporter"
    if rel == "package.json":
        return "PackageManifestImporter"
    if ext in TEXT:
        return "TextScriptImporter"
    return "DefaultImporter"


def meta_text(rel, is_dir):
    head = "fileFormatVersion: 2\nguid: %s\n" % guid(rel)
    if is_dir:
        return head + "folderAsset: yes\nDefaultImporter:\n" + TAIL
    imp = importer(rel, is_dir)
    return head + (MONO if imp == "MonoImporter" else imp + ":\n" + TAIL)


def assets(root=PACKAGE):
    """{relative path: is_dir} of every file and folder Unity imports from the package."""
    out = {}

    def walk(d, rel):
        for e in sorted(os.scandir(d), key=lambda e: e.name):
            is_dir = e.is_dir(follow_symlinks=False)
            if skipped(e.name, is_dir) or (not is_dir and e.name.endswith(".meta")):
                continue
            r = rel + e.name
            out[r] = is_dir
            if is_dir:
                walk(e.path, r + "/")

    walk(root, "")
    return out


def metas(root=PACKAGE):
    """Every .meta file under the package (relative paths), wherever it is."""
    out = []
    for d, dirs, files in os.walk(root):
        dirs.sort()
        rel = os.path.relpath(d, root).replace(os.sep, "/")
        for f in sorted(files):
            if f.endswith(".meta"):
                out.append(f if rel == "." else rel + "/" + f)
    return out


def problems(root=PACKAGE):
    """(kind, relative .meta path, detail) for every .meta that is missing, wrong or stale."""
    want = assets(root)
    out = []
    for rel, is_dir in want.items():
        path = os.path.join(root, rel + ".meta")
        if not os.path.isfile(path):
            out.append(("missing", rel + ".meta", "for " + ("folder " if is_dir else "") + rel))
            continue
        with open(path, "rb") as f:
            got = f.read()
        if got != meta_text(rel, is_dir).encode("utf-8"):
            out.append(("wrong", rel + ".meta", "not what Unity writes with guid " + guid(rel)
                        + " and " + importer(rel, is_dir)))
    for m in metas(root):
        asset = m[:-len(".meta")]
        if asset not in want:
            parts = asset.split("/")
            hidden = any(skipped(p, True) for p in parts[:-1])
            out.append(("stale", m, "in a folder Unity skips" if hidden else "no such asset"))
    return out


def main(argv):
    check = "--check" in argv[1:]
    if any(a != "--check" for a in argv[1:]):
        print("usage: unity_meta.py [--check]", file=sys.stderr)
        return 2
    found = problems()
    if check:
        for kind, m, detail in found:
            print("%s: %s (%s)" % (kind, m, detail))
        if found:
            print("unity_meta.py --check: %d problem(s); run Tools~/unity_meta.py to fix" % len(found))
            return 1
        return 0
    for kind, m, detail in found:
        path = os.path.join(PACKAGE, m)
        if kind == "stale":
            os.remove(path)
            print("removed", m, "(" + detail + ")")
        else:
            rel = m[:-len(".meta")]
            with open(path, "w", encoding="utf-8", newline="\n") as f:
                f.write(meta_text(rel, os.path.isdir(os.path.join(PACKAGE, rel))))
            print("wrote", m)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
