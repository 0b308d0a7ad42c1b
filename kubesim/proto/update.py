#!/usr/bin/env python3
"""Re-vendors the protobuf message definitions kubesim decodes and encodes bodies with.

kubesim's protobuf codec (kubesim/src/protobuf/) reads Kubernetes' own `generated.proto`
files for the group/versions it serves, at the release kubesim emulates (v1.32, module
tag v0.32.x). Two facts a .proto file does not carry come from the Go types next to it,
and this script writes them to `go-fields.txt`:

  field <message> <number> <json name> <flags>
      one line per protobuf field of a Go struct: its JSON name (the `json:` tag; "-" when
      the field is inlined, Go's `json:",inline"`), and flags: `p` the Go field is a
      pointer (so the encoder writes it only when set, and a zero value on the wire is
      meaningful), `o` the JSON tag has omitempty, `i` inlined; `-` for none.
  list <message>
      a Go named slice (`type ExtraValue []string`) that protobuf wraps as a message with
      one `repeated items = 1` field, and JSON writes as a plain array.

Usage: kubesim/proto/update.py [--tag v0.32.13] [--from DIR]
  DIR holds git clones (or mirrors) named api, apimachinery, apiextensions-apiserver and
  kube-aggregator; without --from the script clones the four repositories of the
  `kubernetes` organisation on GitHub at the tag into a temporary directory.
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))

# The group/versions kubesim serves (kubesim/src/resources.rs), as directories of k8s.io/api.
API_GROUP_VERSIONS = [
    "core/v1",
    "admissionregistration/v1",
    "apps/v1",
    "authentication/v1",
    "authorization/v1",
    "autoscaling/v1",
    "autoscaling/v2",
    "batch/v1",
    "certificates/v1",
    "coordination/v1",
    "discovery/v1",
    "events/v1",
    "flowcontrol/v1",
    "networking/v1",
    "node/v1",
    "policy/v1",
    "rbac/v1",
    "scheduling/v1",
    "storage/v1",
]

# (repository, directory in it, import path prefix of its generated.proto)
SOURCES = [("api", gv, "k8s.io/api") for gv in API_GROUP_VERSIONS] + [
    ("apimachinery", "pkg/apis/meta/v1", "k8s.io/apimachinery"),
    ("apimachinery", "pkg/api/resource", "k8s.io/apimachinery"),
    ("apimachinery", "pkg/util/intstr", "k8s.io/apimachinery"),
    ("apimachinery", "pkg/runtime", "k8s.io/apimachinery"),
    ("apimachinery", "pkg/runtime/schema", "k8s.io/apimachinery"),
    ("apiextensions-apiserver", "pkg/apis/apiextensions/v1", "k8s.io/apiextensions-apiserver"),
    ("kube-aggregator", "pkg/apis/apiregistration/v1", "k8s.io/kube-aggregator"),
]

FIELD = re.compile(r"^[ \t]*(?:(\w+)[ \t]+)?([^\s`]+)[ \t]+`([^`]*protobuf:\"[^`]*)`", re.M)
STRUCT = re.compile(r"^type (\w+) struct \{\n(.*?)^\}", re.M | re.S)
NAMED_SLICE = re.compile(r"^type (\w+) \[\]\S+\s*$", re.M)


def git(repo, *args):
    return subprocess.run(["git", "-C", repo, *args], check=True, capture_output=True, text=True).stdout


def go_facts(repo, tag, directory, package, messages):
    """The `field` and `list` lines of one Go package."""
    lines = []
    for path in git(repo, "ls-tree", "--name-only", tag, directory + "/").split():
        name = os.path.basename(path)
        if not name.endswith(".go") or name.endswith("_test.go") or name.startswith("zz_generated"):
            continue
        if name == "generated.pb.go":
            continue
        src = git(repo, "show", f"{tag}:{path}")
        for struct, body in STRUCT.findall(src):
            if struct not in messages:
                continue
            for go_name, go_type, tags in FIELD.findall(body):
                proto = re.search(r'protobuf:"([^"]*)"', tags).group(1).split(",")
                if len(proto) < 2:
                    continue  # `protobuf:"-"`: not on the wire
                number = proto[1]
                json_tag = re.search(r'json:"([^"]*)"', tags)
                parts = json_tag.group(1).split(",") if json_tag else [go_name]
                flags = ""
                if go_type.startswith("*"):
                    flags += "p"
                if "omitempty" in parts[1:]:
                    flags += "o"
                if "inline" in parts[1:] or (not go_name and parts[0] == ""):
                    flags += "i"
                json_name = parts[0] or "-"
                lines.append(f"field {package}.{struct} {number} {json_name} {flags or '-'}")
        for slice_type in NAMED_SLICE.findall(src):
            if slice_type in messages:
                lines.append(f"list {package}.{slice_type}")
    return lines


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tag", default="v0.32.13")
    parser.add_argument("--from", dest="source")
    args = parser.parse_args()
    source = args.source
    if source is None:
        source = tempfile.mkdtemp(prefix="kubesim-proto-")
        for repo in sorted({r for r, _, _ in SOURCES}):
            subprocess.run(
                ["git", "clone", "--quiet", "--bare", "--depth", "1", "--branch", args.tag,
                 f"https://github.com/kubernetes/{repo}", os.path.join(source, repo)],
                check=True,
            )
    facts = [f"# Generated by kubesim/proto/update.py from the Go types at {args.tag}; do not edit."]
    for repo_name, directory, prefix in SOURCES:
        repo = os.path.join(source, repo_name)
        if os.path.isdir(os.path.join(repo, "repo")):
            repo = os.path.join(repo, "repo")
        proto = git(repo, "show", f"{args.tag}:{directory}/generated.proto")
        out = os.path.join(HERE, prefix, directory, "generated.proto")
        os.makedirs(os.path.dirname(out), exist_ok=True)
        with open(out, "w") as f:
            f.write(proto)
        package = re.search(r"^package ([\w.]+);", proto, re.M).group(1)
        messages = set(re.findall(r"^message (\w+) \{", proto, re.M))
        facts += go_facts(repo, args.tag, directory, package, messages)
    with open(os.path.join(HERE, "go-fields.txt"), "w") as f:
        f.write("\n".join(facts) + "\n")
    print(f"vendored {len(SOURCES)} generated.proto files and {len(facts) - 1} Go facts", file=sys.stderr)


if __name__ == "__main__":
    main()
