//! A render cache keyed by content, not by commit.
//!
//! Each App's last render result is kept with the inputs the renderer recorded
//! ([`crate::render::Rendered::inputs`]: every file read, directory listed and path probed, with a sha256 of
//! what was seen). On a new revision the inputs are re-checked against the new tree
//! ([`crate::render::InputsFingerprint`], kept in place of the digests); when all
//! are unchanged the cached result is reused without rendering. In a monorepo a commit touching
//! App A's files therefore re-renders only App A, while adding a file to a directory App B
//! lists (its listing hash changes) re-renders App B.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;

use crate::render::tree::Tree;
use crate::render::{PackedRender, RenderError, render};

use super::url::SourceKey;

/// What [`RenderCache::render`] returned.
#[derive(Debug, Clone)]
pub struct CachedRender {
    /// The render result, packed.
    pub rendered: Arc<PackedRender>,
    /// `true` when the cached result was reused (no render ran).
    pub reused: bool,
}

struct Entry {
    source_key: SourceKey,
    dir: String,
    rendered: Arc<PackedRender>,
}

/// Per-App render results, reused while their recorded inputs are unchanged.
#[derive(Default)]
pub struct RenderCache {
    entries: Mutex<HashMap<String, Entry>>,
}

impl RenderCache {
    /// An empty cache.
    pub fn new() -> Self {
        Self::default()
    }

    /// Renders `dir` of `tree` for App `app`, or reuses the App's previous result when the
    /// source and directory are the same and every recorded input is unchanged in `tree`.
    pub fn render(
        &self,
        app: &str,
        source_key: &SourceKey,
        tree: &dyn Tree,
        dir: &str,
    ) -> Result<CachedRender, RenderError> {
        let previous = {
            let entries = self.entries.lock();
            entries
                .get(app)
                .filter(|e| &e.source_key == source_key && e.dir == dir)
                .map(|e| e.rendered.clone())
        };
        if let Some(rendered) = previous
            && rendered.inputs.unchanged(tree)
        {
            return Ok(CachedRender {
                rendered,
                reused: true,
            });
        }
        let rendered = Arc::new(PackedRender::from(render(tree, dir)?));
        let mut entries = self.entries.lock();
        entries.insert(
            app.to_string(),
            Entry {
                source_key: source_key.clone(),
                dir: dir.to_string(),
                rendered: rendered.clone(),
            },
        );
        Ok(CachedRender {
            rendered,
            reused: false,
        })
    }

    /// Forgets App `app` (deleted, or its source changed).
    pub fn remove(&self, app: &str) {
        let mut entries = self.entries.lock();
        entries.remove(app);
    }

    /// How many Apps have a cached render.
    pub fn len(&self) -> usize {
        self.entries.lock().len()
    }

    /// Whether the cache is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
