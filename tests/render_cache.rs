//! The content-keyed render cache on a monorepo fixture made with `git`, rendered by the real
//! renderer from Git trees read out of the mirror.

mod support;

use support::Upstream;
use wardn::sources::credentials::Credentials;
use wardn::sources::git::{GitSettings, Mirror};
use wardn::sources::render_cache::{CachedRender, RenderCache};
use wardn::sources::snapshot::Snapshot;
use wardn::sources::spec::GitRef;
use wardn::sources::url::parse_repo_url;

fn cm(name: &str, value: &str) -> String {
    format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n  v: \"{value}\"\n")
}

fn head(m: &Mirror) -> Snapshot {
    m.fetch().unwrap();
    m.snapshot(m.resolve(&GitRef::Branch("main".into())).unwrap())
        .unwrap()
}

/// The objects of a cached render.
fn objects(cached: &CachedRender) -> Vec<serde_json::Value> {
    cached.rendered.objects.unpack().unwrap()
}

/// The names of a cached render's objects, in output order.
fn names(cached: &CachedRender) -> Vec<String> {
    objects(cached)
        .iter()
        .map(|o| o["metadata"]["name"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn only_apps_whose_inputs_changed_are_re_rendered() {
    let tmp = tempfile::tempdir().unwrap();
    let up = Upstream::init(&tmp.path().join("mono"));
    // App A: a kustomization over a shared base. App B: a plain directory of manifests.
    up.commit(
        &[
            ("base/kustomization.yaml", "resources: [cm.yaml]\n"),
            ("base/cm.yaml", &cm("base", "1")),
            (
                "apps/a/kustomization.yaml",
                "resources: [../../base, a.yaml]\nnamePrefix: a-\n",
            ),
            ("apps/a/a.yaml", &cm("x", "1")),
            ("apps/b/b1.yaml", &cm("b1", "1")),
            ("README.md", "monorepo\n"),
        ],
        "initial",
    );
    let m = Mirror::open(
        &GitSettings {
            data_dir: tmp.path().join("data"),
            extra_roots_pem: None,
            ..GitSettings::default()
        },
        parse_repo_url(&up.url()).unwrap(),
        Credentials::Anonymous,
    )
    .unwrap();
    let key = m.key().clone();
    let cache = RenderCache::new();
    let render_all = |snap: &Snapshot| {
        let a = cache
            .render("a", &key, snap.tree.as_ref(), "apps/a")
            .unwrap();
        let b = cache
            .render("b", &key, snap.tree.as_ref(), "apps/b")
            .unwrap();
        (a, b)
    };

    let s1 = head(&m);
    let (a, b) = render_all(&s1);
    assert!(!a.reused && !b.reused);
    assert_eq!(names(&a), ["a-base", "a-x"]);
    assert_eq!(names(&b), ["b1"]);
    // The same tree validates every recorded input (the cache follows the renderer's
    // recording conventions).
    assert!(a.rendered.inputs.unchanged(s1.tree.as_ref()));
    assert!(b.rendered.inputs.unchanged(s1.tree.as_ref()));

    // A commit touching only unrelated files re-renders nothing.
    up.commit(&[("README.md", "changed\n")], "docs");
    let (a, b) = render_all(&head(&m));
    assert!(a.reused && b.reused);

    // A commit touching App A's files (here its base) re-renders A only.
    up.commit(&[("base/cm.yaml", &cm("base", "2"))], "base change");
    let (a, b) = render_all(&head(&m));
    assert!(!a.reused, "A's base changed");
    assert!(b.reused, "B must not be re-rendered");
    assert_eq!(objects(&a)[0]["metadata"]["name"], "a-base");
    assert_eq!(objects(&a)[0]["data"]["v"], "2");

    // Adding a file to the directory App B lists re-renders B only.
    up.commit(&[("apps/b/b2.yaml", &cm("b2", "1"))], "add to b");
    let (a, b) = render_all(&head(&m));
    assert!(a.reused, "A must not be re-rendered");
    assert!(!b.reused, "B's listing changed");
    assert_eq!(names(&b), ["b1", "b2"]);

    // A probed path appearing (a second kustomization file next to A's) re-renders A, which
    // now fails as in kustomize.
    up.commit(
        &[("apps/a/kustomization.yml", "resources: []\n")],
        "ambiguous",
    );
    let snap = head(&m);
    assert!(
        cache
            .render("a", &key, snap.tree.as_ref(), "apps/a")
            .is_err()
    );
    assert!(
        cache
            .render("b", &key, snap.tree.as_ref(), "apps/b")
            .unwrap()
            .reused
    );

    // Another directory or source is never served from the cache.
    assert!(
        !cache
            .render("b", &key, snap.tree.as_ref(), "base")
            .unwrap()
            .reused
    );
    assert_eq!(cache.len(), 2);
    cache.remove("b");
    assert_eq!(cache.len(), 1);
}
