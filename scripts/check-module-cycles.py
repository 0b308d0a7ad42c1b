#!/usr/bin/env python3
"""Finds import cycles between Rust modules; exits 1 if there is one.

For each crate source root (by default `src/` and `kubesim/src/`, relative to the repository
root; `--root DIR` checks DIR instead and may be given more than once) it reads the module
tree from `lib.rs` (or `main.rs` when there is no `lib.rs`) and builds, for every module that
has submodules, the graph of references between those submodules:

* at the crate root, between the top-level modules (the files and folders directly under
  the root), from `crate::NAME` paths;
* in each folder, between sibling submodules, from `super::NAME`, `crate::...::NAME` and
  `self::...` paths.

Paths are taken from `use` declarations (including grouped forms such as
`use crate::{a, b::c}` and `use super::{x::{y, z}, w}`) and from inline paths in code
(`crate::a::f()`). A path through a name the parent module imports (`super::Thing` where
the parent has `pub use a::Thing`) counts as a reference to the module it came from, so a
re-export does not hide a cycle. Comments, string literals, `#[cfg(test)]` items (such as
`mod tests { ... }` blocks and `#[cfg(test)] mod tests;` files) and `$crate` paths in macros
are ignored.

It prints the edges it found, scope by scope, then each cycle (`cycle in src/render: loader
-> patches -> loader`), and exits 1 if there was any cycle, 0 otherwise. Python 3 standard
library only.
"""

import argparse
import os
import re
import sys

DEFAULT_ROOTS = ["src", "kubesim/src"]

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"


# --- Reading a source file -------------------------------------------------------------------


def strip_comments_and_strings(text):
    """Replaces comments and the contents of string and char literals with spaces (newlines
    kept, so positions and lines stay meaningful)."""
    out = []
    i = 0
    n = len(text)
    while i < n:
        c = text[i]
        nxt = text[i + 1] if i + 1 < n else ""
        if c == "/" and nxt == "/":
            end = text.find("\n", i)
            end = n if end == -1 else end
            out.append(" " * (end - i))
            i = end
        elif c == "/" and nxt == "*":
            depth = 0
            j = i
            while j < n:
                if text.startswith("/*", j):
                    depth += 1
                    j += 2
                elif text.startswith("*/", j):
                    depth -= 1
                    j += 2
                    if depth == 0:
                        break
                else:
                    j += 1
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == "r" and re.match(r'r#*"', text[i:]) and (i == 0 or not re.match(r"[A-Za-z0-9_]", text[i - 1])):
            m = re.match(r'r(#*)"', text[i:])
            hashes = m.group(1)
            close = '"' + hashes
            start = i + len(m.group(0))
            end = text.find(close, start)
            end = n if end == -1 else end + len(close)
            out.append('""' + re.sub(r"[^\n]", " ", text[i + 2 : end]))
            i = end
        elif c == "b" and nxt == '"' and (i == 0 or not re.match(r"[A-Za-z0-9_]", text[i - 1])):
            out.append("b")
            i += 1
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append('"' + re.sub(r"[^\n]", " ", text[i + 1 : j - 1]) + '"')
            i = j
        elif c == "'":
            # A char literal ('x', '\n', '\u{1F600}'), else a lifetime or label ('a).
            m = re.match(r"'(\\u\{[0-9A-Fa-f]+\}|\\.|[^\\'])'", text[i:])
            if m:
                out.append("' '" + " " * (len(m.group(0)) - 3))
                i += len(m.group(0))
            else:
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def skip_item(text, start):
    """The end of the item that starts at `start`: its first `;` at bracket depth 0, or the
    `}` that closes its first `{`."""
    depth = 0
    i = start
    n = len(text)
    while i < n:
        c = text[i]
        if c in "({[":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth == 0 and c == "}":
                return i + 1
        elif c == ";" and depth == 0:
            return i + 1
        i += 1
    return n


CFG_TEST = re.compile(r"#\s*\[\s*cfg\s*\(\s*test\s*\)\s*\]")
ATTRIBUTE = re.compile(r"\s*#\s*\[")
MOD_DECL = re.compile(r"(?:pub(?:\s*\([^)]*\))?\s+)?mod\s+(" + IDENT + r")\s*;")


def skip_attributes(text, i):
    """The position after any attributes starting at `i`."""
    while True:
        m = ATTRIBUTE.match(text, i)
        if not m:
            return i
        depth = 0
        j = m.end() - 1
        while j < len(text):
            if text[j] == "[":
                depth += 1
            elif text[j] == "]":
                depth -= 1
                if depth == 0:
                    break
            j += 1
        i = j + 1


def remove_test_items(code):
    """Blanks out every item marked `#[cfg(test)]`; returns the code and the names of the
    `#[cfg(test)] mod NAME;` declarations (test-only module files)."""
    test_mods = set()
    while True:
        m = CFG_TEST.search(code)
        if not m:
            return code, test_mods
        item = skip_attributes(code, m.end())
        decl = MOD_DECL.match(code, item)
        if decl:
            test_mods.add(decl.group(1))
        end = skip_item(code, item)
        code = code[: m.start()] + re.sub(r"[^\n]", " ", code[m.start() : end]) + code[end:]


# --- `use` trees ------------------------------------------------------------------------------


def tokenize_use_tree(text):
    return re.findall(r"::|[{},*]|" + IDENT, text)


def parse_use_tree(tokens, pos, prefix, out):
    """Parses one use tree from tokens[pos:], appending (path, binding, is_glob) to out;
    returns the position after it."""
    path = list(prefix)
    while pos < len(tokens):
        tok = tokens[pos]
        if tok == "{":
            pos += 1
            while pos < len(tokens) and tokens[pos] != "}":
                if tokens[pos] == ",":
                    pos += 1
                    continue
                pos = parse_use_tree(tokens, pos, path, out)
            return pos + 1
        if tok == "*":
            out.append((path, None, True))
            return pos + 1
        if tok == "::":
            pos += 1
            continue
        if tok in (",", "}"):
            break
        if tok == "as":
            alias = tokens[pos + 1] if pos + 1 < len(tokens) else None
            out.append((path, alias, False))
            return pos + 2
        path = path + [tok]
        pos += 1
        if pos < len(tokens) and tokens[pos] not in ("::", "as"):
            break
    if path:
        if path[-1] == "self":
            path = path[:-1]
        if path:
            out.append((path, path[-1], False))
    return pos


USE_DECL = re.compile(r"\buse\s+([^;]*);")
VISIBILITY_IN = re.compile(r"\bpub\s*\(\s*in\s+[^)]*\)")
INLINE_PATH = re.compile(r"(?<![\w$:])((?:crate|super|self)(?:\s*::\s*" + IDENT + r")+)")
BARE_PATH = re.compile(r"(?<![\w$:.])(" + IDENT + r")\s*::\s*(" + IDENT + r")")
DEFINITION = re.compile(
    r"\b(?:fn|struct|enum|trait|type|const|static|union|mod)\s+(" + IDENT + r")|macro_rules!\s*(" + IDENT + r")"
)


class Module:
    def __init__(self, path, file, parent):
        self.path = path  # tuple of names from the crate root
        self.file = file
        self.parent = parent
        self.children = {}
        self.bindings = {}  # name -> absolute path (tuple), from `use`
        self.globs = []  # absolute module paths, from `use x::*`
        self.definitions = set()
        self.uses = []  # (path, binding, is_glob) as written
        self.inline = []  # paths as written (lists), outside `use`


def child_file(directory, stem, name):
    """The file of `mod name;` declared in a module whose own file is `stem` in `directory`."""
    base = directory if stem in ("lib", "main", "mod") else os.path.join(directory, stem)
    for candidate in (os.path.join(base, name + ".rs"), os.path.join(base, name, "mod.rs")):
        if os.path.isfile(candidate):
            return candidate
    return None


def load_module(file, path, parent, modules):
    module = Module(path, file, parent)
    modules[path] = module
    with open(file, encoding="utf-8") as handle:
        code = strip_comments_and_strings(handle.read())
    code, test_mods = remove_test_items(code)
    code = VISIBILITY_IN.sub(" ", code)
    for m in DEFINITION.finditer(code):
        module.definitions.add(m.group(1) or m.group(2))
    for m in MOD_DECL.finditer(code):
        name = m.group(1)
        if name in test_mods:
            continue
        directory, filename = os.path.split(file)
        target = child_file(directory, filename[:-3], name)
        if target:
            module.children[name] = load_module(target, path + (name,), module, modules)
    for m in USE_DECL.finditer(code):
        parse_use_tree(tokenize_use_tree(m.group(1)), 0, [], module.uses)
    rest = USE_DECL.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), code)
    for m in INLINE_PATH.finditer(rest):
        module.inline.append(re.split(r"\s*::\s*", m.group(1)))
    for m in BARE_PATH.finditer(rest):
        module.inline.append([m.group(1), m.group(2)])
    return module


# --- Resolving paths ---------------------------------------------------------------------------


def start_of(path, module, modules, relative_ok):
    """The module a path's first segment names, and the remaining segments; None for an
    external crate or anything this script cannot place."""
    first = path[0]
    if first == "crate":
        return modules[()], path[1:]
    if first == "self":
        return module, path[1:]
    if first == "super":
        current = module
        rest = list(path)
        while rest and rest[0] == "super":
            current = current.parent
            rest = rest[1:]
            if current is None:
                return None
        return current, rest
    if relative_ok:
        return module, list(path)
    return None


def bind_imports(modules):
    """Fills each module's bindings and globs with absolute paths. Bindings point at the
    deepest module reached (or at the item's module, for an item)."""
    for module in modules.values():
        for path, binding, is_glob in module.uses:
            if not path:
                continue
            started = start_of(path, module, modules, relative_ok=True)
            if started is None:
                continue
            current, rest = started
            if path[0] not in ("crate", "self", "super") and path[0] not in current.children:
                continue  # an external crate (or a name from a glob: left unresolved)
            absolute = tuple(current.path) + tuple(rest)
            if is_glob:
                module.globs.append(absolute)
            elif binding is not None:
                module.bindings[binding] = absolute


def canonical(target, modules, seen):
    """Follows an absolute path through modules and their bindings to the module that holds
    the item (or the module itself)."""
    current = modules[()]
    for index, name in enumerate(target):
        if name in current.children:
            current = current.children[name]
            continue
        key = (current.path, name)
        if name in current.bindings and key not in seen:
            seen.add(key)
            return canonical(tuple(current.bindings[name]) + tuple(target[index + 1 :]), modules, seen)
        for glob in current.globs:
            glob_key = (current.path, name, glob)
            if glob_key in seen:
                continue
            glob_module = modules.get(canonical(glob, modules, set(seen)))
            if glob_module is not None and (
                name in glob_module.children or name in glob_module.bindings or name in glob_module.definitions
            ):
                seen.add(glob_key)
                return canonical(glob_module.path + tuple(target[index:]), modules, seen)
        return current.path
    return current.path


def references(module, modules):
    """The absolute module paths a module's code refers to."""
    found = []
    for path, binding, is_glob in module.uses:
        if not path:
            continue
        started = start_of(path, module, modules, relative_ok=True)
        if started is None:
            continue
        current, rest = started
        if path[0] not in ("crate", "self", "super") and path[0] not in current.children:
            continue
        found.append(canonical(tuple(current.path) + tuple(rest), modules, set()))
    for path in module.inline:
        if path[0] in ("crate", "self", "super"):
            started = start_of(path, module, modules, relative_ok=False)
            if started is None:
                continue
            current, rest = started
            found.append(canonical(tuple(current.path) + tuple(rest), modules, set()))
        else:
            name = path[0]
            if name in module.children:
                found.append(module.children[name].path)
            elif name in module.bindings:
                found.append(canonical(tuple(module.bindings[name]) + tuple(path[1:]), modules, set()))
    return found


# --- Graphs and cycles -------------------------------------------------------------------------


def find_cycles(nodes, edges):
    """One cycle (a list of nodes, first repeated last) per strongly connected component of
    more than one node, with the component's nodes."""
    index = {}
    low = {}
    stack = []
    on_stack = set()
    components = []
    counter = [0]

    def strongconnect(node):
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for succ in sorted(edges.get(node, ())):
            if succ not in index:
                strongconnect(succ)
                low[node] = min(low[node], low[succ])
            elif succ in on_stack:
                low[node] = min(low[node], index[succ])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                components.append(set(component))

    for node in sorted(nodes):
        if node not in index:
            strongconnect(node)

    cycles = []
    for component in components:
        start = min(component)
        # Shortest path back to start within the component (breadth-first).
        previous = {start: None}
        queue = [start]
        found = None
        while queue and found is None:
            node = queue.pop(0)
            for succ in sorted(edges.get(node, ())):
                if succ not in component:
                    continue
                if succ == start:
                    found = node
                    break
                if succ not in previous:
                    previous[succ] = node
                    queue.append(succ)
        cycle = [start]
        node = found
        while node is not None and node != start:
            cycle.append(node)
            node = previous[node]
        cycle.append(start)
        cycles.append(([cycle[0]] + list(reversed(cycle[1:-1])) + [start], sorted(component)))
    return cycles


def check_root(root, display):
    """Prints the edges of one crate source root; returns the cycles found as
    (scope, cycle, modules in its strongly connected component)."""
    top = None
    for name in ("lib.rs", "main.rs"):
        if os.path.isfile(os.path.join(root, name)):
            top = os.path.join(root, name)
            break
    if top is None:
        print(f"{display}: no lib.rs or main.rs", file=sys.stderr)
        return [(display, ["<no crate root>"], [])]
    modules = {}
    load_module(top, (), None, modules)
    bind_imports(modules)

    # Edges between the children of every module that has children.
    scopes = {}
    for module in modules.values():
        if module.children:
            scopes[module.path] = {name: set() for name in module.children}
    for module in modules.values():
        targets = references(module, modules)
        for depth in range(len(module.path)):
            scope, child = module.path[:depth], module.path[depth]
            if scope not in scopes:
                continue
            for target in targets:
                if len(target) > depth and target[:depth] == scope and target[depth] != child:
                    scopes[scope][child].add(target[depth])

    cycles = []
    for scope in sorted(scopes):
        edges = scopes[scope]
        name = "/".join((display,) + scope)
        count = sum(len(v) for v in edges.values())
        print(f"{name}: {len(edges)} modules, {count} edges")
        for source in sorted(edges):
            for target in sorted(edges[source]):
                print(f"  {source} -> {target}")
        for cycle, component in find_cycles(edges.keys(), edges):
            cycles.append((name, cycle, component))
    return cycles


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--root",
        action="append",
        metavar="DIR",
        help="a crate source directory (with lib.rs or main.rs) to check instead of the defaults; repeatable",
    )
    args = parser.parse_args()
    if args.root:
        roots = [(root, root) for root in args.root]
    else:
        repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        roots = [(os.path.join(repo, root), root) for root in DEFAULT_ROOTS]
    cycles = []
    for root, display in roots:
        cycles.extend(check_root(root, display))
    if cycles:
        for scope, cycle, component in cycles:
            line = f"cycle in {scope}: {' -> '.join(cycle)}"
            if len(component) > len(cycle) - 1:
                line += f" (all mutually dependent: {', '.join(component)})"
            print(line)
        return 1
    print("no module cycles")
    return 0


if __name__ == "__main__":
    sys.exit(main())
