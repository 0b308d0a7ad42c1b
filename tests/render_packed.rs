//! Rendered objects as the daemon keeps them between passes ([`PackedObjects`]): read back,
//! they print the same bytes `kubectl kustomize` printed, for every tree of the real-world
//! corpus that renders; and re-packing them pass after pass (what a promoted App's pins do)
//! never drifts.

#[path = "support/real_world.rs"]
mod real_world;

use wardn::render::{DirTree, PackedObjects, objects_digest, render};

#[test]
fn every_real_world_tree_reads_back_to_kustomizes_bytes() {
    let mut checked = 0;
    for case in real_world::cases() {
        if case.how == "error" {
            continue;
        }
        let dir = DirTree::new(&case.root).expect("vendored repository");
        let Ok(rendered) = render(&dir, &case.tree) else {
            continue;
        };
        let back = PackedObjects::pack(&rendered.objects)
            .unpack()
            .unwrap_or_else(|e| panic!("{} {}: {e}", case.slug, case.tree));
        assert_eq!(back, rendered.objects, "{} {}", case.slug, case.tree);
        // Equal values may still differ in key order; the printed bytes may not.
        assert_eq!(
            objects_digest(&back),
            rendered.digest,
            "{} {}: packed objects print other bytes",
            case.slug,
            case.tree
        );
        checked += 1;
    }
    assert!(checked >= 50, "only {checked} trees rendered");
}

#[test]
fn a_thousand_repackings_keep_the_objects_and_their_bytes() {
    // An App-sized tree: the first of the corpus that renders 5 to 30 KB of YAML.
    let rendered = real_world::cases()
        .into_iter()
        .filter(|c| c.how != "error")
        .filter_map(|c| render(&DirTree::new(&c.root).ok()?, &c.tree).ok())
        .find(|r| (5_000..30_000).contains(&r.yaml.len()))
        .expect("an App-sized tree in the corpus");
    let mut packed = PackedObjects::pack(&rendered.objects);
    for _ in 0..1_000 {
        packed = PackedObjects::pack(&packed.unpack().expect("reads back"));
    }
    let back = packed.unpack().expect("reads back");
    assert_eq!(back, rendered.objects);
    assert_eq!(objects_digest(&back), rendered.digest);
    assert_eq!(packed, PackedObjects::pack(&rendered.objects));
}
