//! Loading and building kustomizations: finding the kustomization file, accumulating
//! `resources` (files and nested kustomizations) and `components`, then running the
//! generators and transformers of each level, in kustomize's order.

use std::collections::HashSet;
use std::sync::Arc;

use serde_json::Value;

use super::config::Config;
use super::files::{display_dir, in_root, read_restricted, refuse_remote};
use super::kustomization::Kustomization;
use super::resource::{Origin, Res};
use super::tree::{EntryKind, Tree, TreeError, join, normalize};
use super::vars::{self, Var};
use super::{
    RenderError, checks, crds, generators, nameref, parse, patches, plugins, replacements, sort,
    transform,
};

/// The file names kustomize recognises, in the order it probes them.
pub const KUSTOMIZATION_FILES: [&str; 3] =
    ["kustomization.yaml", "kustomization.yml", "Kustomization"];

/// Deepest nesting of kustomizations accepted (cycles are detected separately).
const MAX_DEPTH: usize = 64;

/// Builds the directory `dir` of `tree` into the final, ordered objects.
pub fn build_top(tree: &dyn Tree, dir: &str) -> Result<Vec<Value>, RenderError> {
    if tree.kind(dir)? != Some(EntryKind::Dir) {
        return Err(RenderError::Invalid(format!(
            "{}: not a directory",
            display_dir(dir)
        )));
    }
    let Some(file) = find_kustomization(tree, dir)? else {
        // A kustomization file that is a symlink out of the directory is refused, as
        // kustomize refuses it, rather than the directory rendered as plain manifests.
        if has_refused_kustomization(tree, dir)? {
            return Err(missing_kustomization(dir));
        }
        return plain_directory(tree, dir);
    };
    let mut builder = Builder {
        tree,
        stack: Vec::new(),
        schema_set: false,
    };
    let mut extras = Extras::default();
    let (mut resources, kust) = builder.build(dir, &file, Vec::new(), &mut extras, Level::Top)?;
    transform::add_hash_suffixes(&mut resources);
    nameref::fix(&mut resources, &extras.config.name_reference);
    vars::resolve(&extras.vars, &extras.config.var_reference, &mut resources)?;
    transform::build_metadata(&mut resources, &kust.build_metadata, dir, &file)?;
    sort::apply(&mut resources, kust.sort_options.as_ref(), &file)?;
    for res in &mut resources {
        drop_empty_metadata_maps(&mut res.obj);
    }
    Ok(resources.into_iter().map(|r| r.obj).collect())
}

/// kustomize drops `metadata.labels` and `metadata.annotations` when they are empty maps.
fn drop_empty_metadata_maps(obj: &mut Value) {
    if let Some(Value::Object(meta)) = obj.get_mut("metadata") {
        for key in ["labels", "annotations"] {
            if meta
                .get(key)
                .is_some_and(|v| v.as_object().is_some_and(|m| m.is_empty()))
            {
                meta.remove(key);
            }
        }
    }
}

/// A directory without a kustomization: its `*.yaml`, `*.yml` and `*.json` files, in lexical
/// order, documents in file order.
fn plain_directory(tree: &dyn Tree, dir: &str) -> Result<Vec<Value>, RenderError> {
    let mut out = Vec::new();
    for entry in tree.read_dir(dir)? {
        let manifest = [".yaml", ".yml", ".json"]
            .iter()
            .any(|ext| entry.name.ends_with(ext));
        if entry.kind == EntryKind::File && manifest {
            let path = join(dir, &entry.name);
            for res in load_file(tree, dir, &path)? {
                out.push(res.obj);
            }
        }
    }
    Ok(out)
}

/// The kustomization file in `dir`, if any; several is an error, as in kustomize. A name
/// that is a symlink leading out of `dir` does not count (kustomize's loader refuses it).
pub fn find_kustomization(tree: &dyn Tree, dir: &str) -> Result<Option<String>, RenderError> {
    let mut found = Vec::new();
    for name in KUSTOMIZATION_FILES {
        let path = join(dir, name);
        let file = match tree.kind(&path) {
            Ok(kind) => kind == Some(EntryKind::File),
            Err(TreeError::Forbidden { .. }) => false,
            Err(e) => return Err(e.into()),
        };
        if file && in_root(tree, dir, &path)? {
            found.push(path);
        }
    }
    if found.len() > 1 {
        return Err(RenderError::Invalid(format!(
            "Found multiple kustomization files under: {}",
            display_dir(dir)
        )));
    }
    Ok(found.pop())
}

/// Whether `dir` holds an entry with a kustomization file name that [`find_kustomization`]
/// does not count (a symlink leading out of `dir` or out of the tree).
fn has_refused_kustomization(tree: &dyn Tree, dir: &str) -> Result<bool, RenderError> {
    for name in KUSTOMIZATION_FILES {
        let path = join(dir, name);
        let refused = match tree.kind(&path) {
            Ok(Some(_)) => !in_root(tree, dir, &path)?,
            Ok(None) => false,
            Err(TreeError::Forbidden { .. }) => true,
            Err(e) => return Err(e.into()),
        };
        if refused {
            return Ok(true);
        }
    }
    Ok(false)
}

/// How a kustomization is being built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Level {
    /// The directory being rendered.
    Top,
    /// A `resources` entry.
    Resource,
    /// A `components` entry.
    Component,
}

/// What a kustomization passes up besides its objects (kustomize's accumulator): the
/// transformer configuration and the vars of it and everything it includes.
#[derive(Debug, Default)]
struct Extras {
    config: Config,
    vars: Vec<Var>,
}

impl Extras {
    /// Takes in what an included kustomization accumulated.
    fn absorb(&mut self, other: Extras) -> Result<(), RenderError> {
        self.config.merge(other.config);
        vars::merge(&mut self.vars, other.vars)
    }
}

struct Builder<'a> {
    tree: &'a dyn Tree,
    /// Directories being built, outermost first (cycle detection).
    stack: Vec<String>,
    /// Whether a kustomization already chose the OpenAPI schema: as in kustomize, the first
    /// one (in build order) that names one decides, and later `openapi` fields are not read.
    schema_set: bool,
}

impl Builder<'_> {
    /// Builds one kustomization on top of `acc` and `extras` (non-empty only for components).
    fn build(
        &mut self,
        dir: &str,
        file: &str,
        mut acc: Vec<Res>,
        extras: &mut Extras,
        level: Level,
    ) -> Result<(Vec<Res>, Kustomization), RenderError> {
        let kust = read_kustomization(self.tree, file)?;
        if !self.schema_set {
            checks::openapi(self.tree, dir, file, &kust)?;
            self.schema_set = kust.openapi.get("version").is_some_and(|v| !v.is_empty());
        }
        let is_component = kust.kind.as_deref() == Some("Component");
        match level {
            Level::Component if !is_component => {
                return Err(RenderError::Invalid(format!(
                    "{file}: expected kind 'Component' for a components entry, got '{}'",
                    kust.kind.as_deref().unwrap_or("Kustomization")
                )));
            }
            // A Component may be rendered on its own (kustomize builds it like a
            // Kustomization), but not listed under `resources`.
            Level::Resource if is_component => {
                return Err(RenderError::Invalid(format!(
                    "{file}: expected kind != 'Component' (a Component can only be listed under components)"
                )));
            }
            _ => {}
        }
        self.stack.push(dir.to_string());
        let result = self.build_body(dir, file, &kust, &mut acc, extras);
        self.stack.pop();
        result?;
        Ok((acc, kust))
    }

    fn build_body(
        &mut self,
        dir: &str,
        file: &str,
        kust: &Kustomization,
        acc: &mut Vec<Res>,
        extras: &mut Extras,
    ) -> Result<(), RenderError> {
        let mut ids: HashSet<String> = acc.iter().map(Res::id).collect();
        let entries: Vec<&String> = kust.resources.iter().chain(&kust.bases).collect();
        let mut preloaded = preload_files(self.tree, dir, &entries);
        for (entry, preloaded) in entries.iter().zip(&mut preloaded) {
            let result = match preloaded.take() {
                Some(files) => files.map(|objects| (objects, Extras::default())),
                None => self.resource_entry(dir, entry),
            };
            let (loaded, sub) = result.map_err(|e| {
                e.context(format!("accumulating resources from '{entry}' in {file}"))
            })?;
            append_unique(acc, &mut ids, loaded, entry)?;
            extras.absorb(sub)?;
        }
        extras
            .config
            .merge(Config::load(self.tree, dir, file, &kust.configurations)?);
        extras
            .config
            .merge(crds::load(self.tree, dir, file, &kust.crds)?);
        // As kustomize: the generators run before the components, which see (and may patch
        // or merge into) what they generated.
        let site = plugins::Site {
            tree: self.tree,
            dir,
            file,
        };
        checks::helm(kust)?;
        generators::run(self.tree, dir, file, kust, acc)?;
        let configs = self.plugin_configs(dir, file, &kust.generators)?;
        plugins::generate(&site, &configs, acc)
            .map_err(|e| e.context(format!("running generators of {file}")))?;
        for entry in &kust.components {
            let path = self.child_dir(dir, entry)?;
            let child = find_kustomization(self.tree, &path)?
                .ok_or_else(|| missing_kustomization(&path))
                .map_err(|e| {
                    e.context(format!("accumulating components from '{entry}' in {file}"))
                })?;
            let taken = std::mem::take(acc);
            let (built, _) = self
                .build(&path, &child, taken, extras, Level::Component)
                .map_err(|e| {
                    e.context(format!("accumulating components from '{entry}' in {file}"))
                })?;
            *acc = built;
        }
        patches::strategic_merge_files(self.tree, dir, file, &kust.patches_strategic_merge, acc)?;
        patches::patches(self.tree, dir, file, &kust.patches, acc)?;
        let config = &extras.config;
        transform::run(kust, acc, config);
        patches::json6902(self.tree, dir, file, &kust.patches_json6902, acc)?;
        transform::replicas(&kust.replicas, acc, file, config)?;
        transform::images(&kust.images, acc, config);
        replacements::run(self.tree, dir, file, &kust.replacements, acc)?;
        let configs = self.plugin_configs(dir, file, &kust.transformers)?;
        plugins::transform(&site, &configs, acc)
            .map_err(|e| e.context(format!("running transformers of {file}")))?;
        let configs = self.plugin_configs(dir, file, &kust.validators)?;
        plugins::validate(&site, &configs, acc)
            .map_err(|e| e.context(format!("running validators of {file}")))?;
        vars::bind(&kust.vars, acc, &mut extras.vars)
            .map_err(|e| e.context(format!("merging vars of {file}")))?;
        Ok(())
    }

    /// The plugin configs of a `generators`/`transformers` list: an entry that parses as
    /// objects is an inline config; any other is a file or directory loaded like a
    /// `resources` entry. As in kustomize, every inline config comes first (in order), then
    /// those loaded from paths.
    fn plugin_configs(
        &mut self,
        dir: &str,
        file: &str,
        entries: &[String],
    ) -> Result<Vec<Value>, RenderError> {
        let mut configs = Vec::new();
        let mut paths = Vec::new();
        for entry in entries {
            let inline = parse::documents(file, entry.as_bytes())
                .ok()
                .filter(|docs| !docs.is_empty() && docs.iter().all(Value::is_object));
            match inline {
                Some(docs) => configs.extend(docs),
                None => paths.push(entry),
            }
        }
        for entry in paths {
            let (loaded, _) = self.resource_entry(dir, entry).map_err(|e| {
                e.context(format!("loading plugin configs from '{entry}' in {file}"))
            })?;
            configs.extend(loaded.into_iter().map(|r| r.obj));
        }
        Ok(configs)
    }

    /// Resolves a directory entry (resource or component), refusing remote URLs and cycles.
    fn child_dir(&self, dir: &str, entry: &str) -> Result<String, RenderError> {
        refuse_remote(entry)?;
        let path = normalize(dir, entry)?;
        for visited in &self.stack {
            if path.is_empty() || *visited == path || visited.starts_with(&format!("{path}/")) {
                return Err(RenderError::Invalid(format!(
                    "cycle detected: candidate root '{}' contains visited root '{}'",
                    display_dir(&path),
                    display_dir(visited)
                )));
            }
        }
        if self.stack.len() >= MAX_DEPTH {
            return Err(RenderError::Invalid(format!(
                "{}: kustomizations nested more than {MAX_DEPTH} deep",
                display_dir(&path)
            )));
        }
        Ok(path)
    }

    /// The objects of a `resources` entry, and what it accumulated when it is a directory.
    fn resource_entry(
        &mut self,
        dir: &str,
        entry: &str,
    ) -> Result<(Vec<Res>, Extras), RenderError> {
        refuse_remote(entry)?;
        let path = normalize(dir, entry)?;
        match self.tree.kind(&path) {
            // A symlink leading out of the tree is taken for a file, which the load
            // restrictor refuses as kustomize does.
            Ok(Some(EntryKind::File)) | Err(TreeError::Forbidden { .. }) => {
                Ok((load_file(self.tree, dir, &path)?, Extras::default()))
            }
            Ok(Some(EntryKind::Dir)) => {
                let path = self.child_dir(dir, entry)?;
                let file = find_kustomization(self.tree, &path)?
                    .ok_or_else(|| missing_kustomization(&path))?;
                let mut sub = Extras::default();
                let (built, _) = self.build(&path, &file, Vec::new(), &mut sub, Level::Resource)?;
                Ok((built, sub))
            }
            Ok(None) => Err(RenderError::Invalid(format!(
                "{path}: no such file or directory"
            ))),
            Err(e) => Err(e.into()),
        }
    }
}

/// The result of loading one manifest file.
type Loaded = Result<Vec<Res>, RenderError>;

/// Most threads parsing the files of one kustomization at once.
const MAX_PARSE_THREADS: usize = 4;

/// Loads the entries among `entries` (of the kustomization in `dir`) that are plain files,
/// on several threads when there are several (parsing is most of a large render's time);
/// `None` for the other entries (directories, remote or missing ones), which the caller
/// handles in order. Each file is loaded exactly as [`load_file`] loads it in order, and the
/// caller reports the first failure in entry order, so the outcome is the sequential one.
fn preload_files(tree: &dyn Tree, dir: &str, entries: &[&String]) -> Vec<Option<Loaded>> {
    let files: Vec<Option<String>> = entries
        .iter()
        .map(|entry| {
            refuse_remote(entry).ok()?;
            let path = normalize(dir, entry).ok()?;
            matches!(tree.kind(&path), Ok(Some(EntryKind::File))).then_some(path)
        })
        .collect();
    let count = files.iter().flatten().count();
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(count)
        .min(MAX_PARSE_THREADS);
    if threads < 2 {
        return files.iter().map(|_| None).collect();
    }
    let slots: Vec<parking_lot::Mutex<Option<Loaded>>> = files
        .iter()
        .map(|_| parking_lot::Mutex::new(None))
        .collect();
    let next = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(slot) = files.get(i) else {
                        break;
                    };
                    if let Some(path) = slot {
                        *slots[i].lock() = Some(load_file(tree, dir, path));
                    }
                }
            });
        }
    });
    slots.into_iter().map(|m| m.into_inner()).collect()
}

/// Reads and parses a kustomization file.
fn read_kustomization(tree: &dyn Tree, file: &str) -> Result<Kustomization, RenderError> {
    let bytes = tree.read_file(file, parse::MAX_FILE_BYTES)?;
    let doc = parse::document(file, &bytes)?;
    let empty = match &doc {
        Value::Null => true,
        Value::Object(m) => m.keys().all(|k| k == "apiVersion" || k == "kind"),
        _ => false,
    };
    if empty {
        return Err(RenderError::Invalid(format!(
            "{file}: kustomization is empty"
        )));
    }
    let kust: Kustomization =
        serde_json::from_value(doc).map_err(|e| RenderError::Kustomization {
            file: file.to_string(),
            message: go_style_json_error(&e.to_string()),
        })?;
    Ok(kust)
}

/// Rewrites serde's "unknown field `x`, expected one of …" as kustomize's
/// `json: unknown field "x"`.
fn go_style_json_error(message: &str) -> String {
    match message.strip_prefix("unknown field `") {
        Some(rest) => {
            let name = rest.split('`').next().unwrap_or(rest);
            format!("json: unknown field \"{name}\"")
        }
        None => message.to_string(),
    }
}

/// Loads the objects of the manifest file `path` named by the kustomization in `dir`
/// (`kind: List` documents are expanded).
pub fn load_file(tree: &dyn Tree, dir: &str, path: &str) -> Result<Vec<Res>, RenderError> {
    let bytes = read_restricted(tree, dir, path)?;
    let (docs, empty_values) = parse::documents_noting_empty_values(path, &bytes)?;
    let count = docs.len();
    // Moved into the file's `Source` should one be kept (not copied: a large file would be
    // held twice while its documents are built).
    let mut bytes = Some(bytes);
    let mut source: Option<Arc<parse::Source>> = None;
    let mut out = Vec::new();
    for (index, doc) in docs.into_iter().enumerate() {
        // Without a value written empty in the file, no field is dropped for being one.
        let nulls = empty_values && parse::has_null(&doc);
        let before = out.len();
        push_object(path, doc, &mut out)?;
        // A document that was one object (not a List) and holds nulls keeps its source, to
        // tell the fields written empty from explicit nulls should a patch touch it.
        if nulls
            && out.len() == before + 1
            && let Some(res) = out.last_mut()
            && res.obj.get("items").is_none()
        {
            let source = match &source {
                Some(source) => source.clone(),
                None => {
                    let text = parse::owned_text(path, bytes.take().unwrap_or_default())?;
                    source
                        .insert(Arc::new(parse::Source::new(text, count)))
                        .clone()
                }
            };
            res.empty_source = Some((source, index));
        }
    }
    Ok(out)
}

fn push_object(path: &str, doc: Value, out: &mut Vec<Res>) -> Result<(), RenderError> {
    let Value::Object(mut map) = doc else {
        return Err(RenderError::Invalid(format!(
            "{path}: a document is not a mapping (a Kubernetes object)"
        )));
    };
    let kind = map.get("kind").and_then(Value::as_str).unwrap_or("");
    if kind.is_empty() {
        return Err(RenderError::Invalid(format!(
            "{path}: missing kind in object"
        )));
    }
    if kind.ends_with("List")
        && let Some(items) = map.get("items")
    {
        let Value::Array(items) = items else {
            return Err(RenderError::Invalid(format!(
                "{path}: items of a {kind} is not a list"
            )));
        };
        for item in items.clone() {
            push_object(path, item, out)?;
        }
        return Ok(());
    }
    // kustomize's bookkeeping annotations replace a null `annotations:` with a map, and an
    // empty one is dropped in the end: a null one never reaches the output (a null `labels:`
    // does, unless a transformer sets labels).
    if let Some(Value::Object(meta)) = map.get_mut("metadata")
        && meta.get("annotations").is_some_and(Value::is_null)
    {
        meta.remove("annotations");
    }
    out.push(Res::new(Value::Object(map), Origin::File(path.to_string())));
    Ok(())
}

/// Appends `new` to `acc`, refusing an id already in `ids` (the ids of `acc`, kept in step).
fn append_unique(
    acc: &mut Vec<Res>,
    ids: &mut HashSet<String>,
    new: Vec<Res>,
    entry: &str,
) -> Result<(), RenderError> {
    for res in new {
        let id = res.id();
        if !ids.insert(id.clone()) {
            return Err(RenderError::Invalid(format!(
                "merging resources from '{entry}': may not add resource with an already registered id: {id}"
            )));
        }
        acc.push(res);
    }
    Ok(())
}

fn missing_kustomization(dir: &str) -> RenderError {
    RenderError::Invalid(format!(
        "unable to find one of 'kustomization.yaml', 'kustomization.yml' or 'Kustomization' in directory '{}'",
        display_dir(dir)
    ))
}
