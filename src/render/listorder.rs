//! kustomize's list order for strategic merge patches. kyaml puts the patch's items of a
//! merged list first, in the patch's order, followed by the items only the original has.
//! `k8s-merge` implements the API server's order (original items interleaved by their live
//! position); moving the original's items that the patch also names to the front, in the
//! patch's order, before merging makes that order coincide with kustomize's.

use k8s_merge::TypeRef;
use serde_json::Value;

/// Reorders the merge-keyed lists of `original` (recursively, following `patch` and `ty`).
pub fn prefer_patch_order(original: &mut Value, patch: &Value, ty: Option<TypeRef>) {
    let Some(ty) = ty else {
        return;
    };
    match (original, patch) {
        (Value::Object(orig), Value::Object(p)) => {
            for (key, sub_patch) in p {
                if let Some(child) = orig.get_mut(key) {
                    let child_ty = ty.field(key).or_else(|| ty.values());
                    prefer_patch_order(child, sub_patch, child_ty);
                }
            }
        }
        (Value::Array(items), Value::Array(p)) => {
            let Some(key) = ty.patch_merge_key() else {
                return;
            };
            if !ty.patch_strategy().merge {
                return;
            }
            let key_of = |v: &Value| v.get(key).cloned();
            let mut front = Vec::new();
            for patch_item in p {
                let Some(k) = key_of(patch_item) else {
                    continue;
                };
                if let Some(pos) = items.iter().position(|i| key_of(i).as_ref() == Some(&k)) {
                    let mut item = items.remove(pos);
                    prefer_patch_order(&mut item, patch_item, ty.items());
                    front.push(item);
                }
            }
            front.append(items);
            *items = front;
        }
        _ => {}
    }
}
