#!/usr/bin/env python3
"""Extract the structure of the Kubernetes v1.32 API types into k8s-merge/schema/v1.32.json.

Source: the PyPI package `kubernetes-validate` (1.37.0), which ships the Kubernetes JSON schemas
with the x-kubernetes-* merge metadata. Descriptions are dropped; types, properties, items,
additionalProperties, required, enum, format and every x-kubernetes-* field are kept. `$ref`s
become plain definition names and nullable types (["string", "null"]) become their base type.

Usage: scripts/extract-schema.py [WHEEL]   (without WHEEL the wheel is fetched with pip download)
"""
import json
import pathlib
import subprocess
import sys
import tempfile
import zipfile

VERSION = "v1.32.0-local"
PACKAGE = "kubernetes-validate==1.37.0"
OUT = pathlib.Path(__file__).resolve().parent.parent / "k8s-merge" / "schema" / "v1.32.json"
KEEP = {"type", "properties", "items", "additionalProperties", "required", "enum", "format", "$ref",
        "oneOf", "allOf", "anyOf"}


def wheel_path(argv):
    if len(argv) > 1:
        return pathlib.Path(argv[1])
    tmp = pathlib.Path(tempfile.mkdtemp())
    subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", str(tmp), PACKAGE],
                   check=True)
    return next(tmp.glob("*.whl"))


def simplify(node):
    if isinstance(node, list):
        return [simplify(v) for v in node]
    if not isinstance(node, dict):
        return node
    out = {}
    for key, value in node.items():
        if key == "$ref":
            out["ref"] = value.split("/")[-1]
        elif key == "type":
            types = [t for t in (value if isinstance(value, list) else [value]) if t != "null"]
            out["type"] = types[0] if len(types) == 1 else types
        elif key == "properties":
            out["properties"] = {k: simplify(v) for k, v in value.items()}
        elif key == "oneOf":
            # IntOrString and Quantity: a union of scalars. Record the scalar kinds only.
            kinds = sorted({t for alt in value for t in ([alt["type"]] if isinstance(alt.get("type"), str)
                                                          else alt.get("type", [])) if t != "null"})
            out["oneOf"] = kinds
        elif key in KEEP or key.startswith("x-kubernetes-"):
            if key == "x-kubernetes-validations":
                continue
            out[key] = value if key.startswith("x-kubernetes-") else simplify(value)
    return out


def main(argv):
    with zipfile.ZipFile(wheel_path(argv)) as wheel:
        raw = json.loads(wheel.read(f"kubernetes_validate/kubernetes-json-schema/{VERSION}/_definitions.json"))
    definitions = {name: simplify(body) for name, body in sorted(raw["$defs"].items())}
    kinds = []
    for name, body in definitions.items():
        for gvk in body.pop("x-kubernetes-group-version-kind", []):
            kinds.append({"group": gvk["group"], "version": gvk["version"], "kind": gvk["kind"], "definition": name})
    kinds.sort(key=lambda k: (k["group"], k["version"], k["kind"]))
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps({"source": f"{PACKAGE} {VERSION}", "kinds": kinds, "definitions": definitions},
                              separators=(",", ":"), sort_keys=True) + "\n")
    print(f"wrote {OUT}: {len(definitions)} definitions, {len(kinds)} kinds")


if __name__ == "__main__":
    main(sys.argv)
