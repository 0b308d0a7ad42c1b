//! People and identities: RoleBindings to User and Group subjects take effect for the
//! namespaced tokens' users and for impersonated users; `Impersonate-User` and
//! `Impersonate-Group` (kubectl `--as`, `--as-group`) are honoured once the caller may
//! `impersonate` them, with kube-apiserver's 403 otherwise. With the real kubectl 1.32.

mod common;

use common::Env;

const READER: &str = r#"apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: cm-reader, namespace: default}
rules: [{apiGroups: [""], resources: [configmaps], verbs: [get, list]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: readers, namespace: default}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: cm-reader}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: kubesim-team-a}
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: bob}
- {apiGroup: rbac.authorization.k8s.io, kind: Group, name: devs}
"#;

const IMPERSONATOR: &str = r#"apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: impersonate-bob}
rules: [{apiGroups: [""], resources: [users], verbs: [impersonate], resourceNames: [bob]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: team-a-impersonates-bob}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: impersonate-bob}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: kubesim-team-a}]
"#;

#[tokio::test]
async fn user_and_group_bindings_and_impersonation_take_effect() {
    let env = Env::start().await;
    let token = env.cluster.tokens().namespaced["team-a"].clone();
    let list_default = ["get", "configmaps", "-n", "default"];

    // Without a binding, a namespaced token stays in its namespace; impersonated users have
    // nothing.
    let out = env.kubectl_with_token(&token, &list_default).await;
    assert_ne!(out.code, 0);
    assert!(
        out.stderr.contains("configmaps is forbidden: User \"kubesim-team-a\" cannot list resource \"configmaps\" in API group \"\" in the namespace \"default\""),
        "{}",
        out.stderr
    );
    let mut as_bob = list_default.to_vec();
    as_bob.push("--as=bob");
    let out = env.kubectl(&as_bob).await;
    assert!(
        out.stderr
            .contains("User \"bob\" cannot list resource \"configmaps\""),
        "{}",
        out.stderr
    );

    let file = env.write("reader.yaml", READER);
    env.kubectl(&["apply", "-f", file.to_str().unwrap()])
        .await
        .ok();

    // The bindings take effect: the token's user, an impersonated user, a group.
    env.kubectl_with_token(&token, &list_default).await.ok();
    env.kubectl(&as_bob).await.ok();
    let mut as_group = list_default.to_vec();
    as_group.extend(["--as=carol", "--as-group=devs"]);
    env.kubectl(&as_group).await.ok();
    let mut as_carol = list_default.to_vec();
    as_carol.push("--as=carol");
    assert_ne!(
        env.kubectl(&as_carol).await.code,
        0,
        "carol alone is not in devs"
    );
    // only what the Role grants
    let out = env
        .kubectl(&[
            "delete",
            "configmap",
            "kube-root-ca.crt",
            "-n",
            "default",
            "--as=bob",
        ])
        .await;
    assert!(
        out.stderr
            .contains("User \"bob\" cannot delete resource \"configmaps\""),
        "{}",
        out.stderr
    );
    let out = env
        .kubectl(&[
            "auth",
            "can-i",
            "list",
            "configmaps",
            "-n",
            "default",
            "--as=bob",
        ])
        .await;
    assert_eq!(out.stdout.trim(), "yes", "{out:?}");

    // Impersonating needs the impersonate verb on that user.
    let out = env.kubectl_with_token(&token, &as_bob).await;
    assert_ne!(out.code, 0);
    assert!(
        out.stderr.contains("users \"bob\" is forbidden: User \"kubesim-team-a\" cannot impersonate resource \"users\" in API group \"\" at the cluster scope"),
        "{}",
        out.stderr
    );
    let file = env.write("impersonator.yaml", IMPERSONATOR);
    env.kubectl(&["apply", "-f", file.to_str().unwrap()])
        .await
        .ok();
    let out = env
        .kubectl_with_token(&token, &["get", "configmaps", "-n", "team-a", "--as=bob"])
        .await;
    assert!(
        out.stderr.contains("User \"bob\" cannot list resource \"configmaps\" in API group \"\" in the namespace \"team-a\""),
        "acting as bob, not as itself: {}",
        out.stderr
    );
    let mut as_alice = list_default.to_vec();
    as_alice.push("--as=alice");
    let out = env.kubectl_with_token(&token, &as_alice).await;
    assert!(
        out.stderr.contains("users \"alice\" is forbidden"),
        "{}",
        out.stderr
    );
    let out = env.kubectl_with_token(&token, &as_group).await;
    assert!(
        out.stderr.contains("users \"carol\" is forbidden"),
        "{}",
        out.stderr
    );
}

/// Impersonating a ServiceAccount acts as it, authorized by the `serviceaccounts`
/// impersonate rule; the 100th impersonated request is decided like the first.
#[tokio::test]
async fn impersonated_service_accounts_act_as_themselves_every_time() {
    let env = Env::start().await;
    let file = env.write(
        "reader.yaml",
        &READER.replace(
            "- {apiGroup: rbac.authorization.k8s.io, kind: Group, name: devs}",
            "- {kind: ServiceAccount, name: robot, namespace: default}",
        ),
    );
    env.kubectl(&["apply", "-f", file.to_str().unwrap()])
        .await
        .ok();
    for i in 0..100 {
        let who = if i % 2 == 0 {
            "system:serviceaccount:default:robot"
        } else {
            "system:serviceaccount:default:other"
        };
        let out = env
            .kubectl(&["get", "configmaps", "-n", "default", &format!("--as={who}")])
            .await;
        assert_eq!(out.code == 0, i % 2 == 0, "{i}: {out:?}");
    }
}

/// `kubectl auth can-i --list` lists what RBAC grants (SelfSubjectRulesReview).
#[tokio::test]
async fn auth_can_i_list_shows_the_granted_rules() {
    let env = Env::start().await;
    let file = env.write("reader.yaml", READER);
    env.kubectl(&["apply", "-f", file.to_str().unwrap()])
        .await
        .ok();
    let out = env
        .kubectl(&["auth", "can-i", "--list", "-n", "default", "--as=bob"])
        .await
        .ok();
    let line = out
        .stdout
        .lines()
        .find(|l| l.starts_with("configmaps "))
        .unwrap_or_else(|| panic!("{}", out.stdout));
    assert!(line.contains("[get list]"), "{line}");
    assert!(!out.stdout.contains("secrets "), "{}", out.stdout);
    let out = env
        .kubectl(&["auth", "can-i", "--list", "-n", "default"])
        .await
        .ok();
    assert!(
        out.stdout.contains("*.*"),
        "the admin may do everything: {}",
        out.stdout
    );
}
