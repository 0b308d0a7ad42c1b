//! The fleet benchmarks' Apps: a local Git monorepo (made with the git CLI) holding
//! `apps/a{i}/` with 10 objects each, and one App file per path, spread over clusters `c{n}`.

use std::path::Path;

/// The 10 objects of App `app`: 4 ConfigMaps, 3 Services, 3 Deployments.
fn object_files(app: usize) -> Vec<(String, String)> {
    let mut files = Vec::new();
    for j in 0..4 {
        files.push((
            format!("cm-{j}.yaml"),
            format!(
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a{app}-cm-{j}\ndata:\n  key: value-{j}\n  app: a{app}\n"
            ),
        ));
    }
    for j in 0..3 {
        files.push((
            format!("svc-{j}.yaml"),
            format!(
                "apiVersion: v1\nkind: Service\nmetadata:\n  name: a{app}-svc-{j}\nspec:\n  selector:\n    app: a{app}-d{j}\n  ports:\n  - port: 80\n    targetPort: 8080\n"
            ),
        ));
        files.push((
            format!("deploy-{j}.yaml"),
            format!(
                "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: a{app}-d{j}\nspec:\n  replicas: 1\n  selector:\n    matchLabels:\n      app: a{app}-d{j}\n  template:\n    metadata:\n      labels:\n        app: a{app}-d{j}\n    spec:\n      containers:\n      - name: web\n        image: nginx:1.27\n        ports:\n        - containerPort: 8080\n"
            ),
        ));
    }
    files
}

fn git(repo: &Path, args: &[&str]) {
    let status = std::process::Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(["-c", "user.name=bench", "-c", "user.email=bench@localhost"])
        .args(args)
        .status()
        .unwrap_or_else(|e| panic!("git: {e}"));
    assert!(status.success(), "git {args:?} failed");
}

/// The monorepo (`repo/apps/a{i}/`, one commit) and the App files (`apps/a{i}.yaml`).
pub fn write_apps(root: &Path, apps: usize, clusters: usize) {
    let app_dir = root.join("apps");
    let repo = root.join("repo");
    std::fs::create_dir_all(&app_dir).unwrap_or_else(|e| panic!("{e}"));
    for i in 0..apps {
        let src = repo.join("apps").join(format!("a{i}"));
        std::fs::create_dir_all(&src).unwrap_or_else(|e| panic!("{e}"));
        for (name, text) in object_files(i) {
            std::fs::write(src.join(name), text).unwrap_or_else(|e| panic!("{e}"));
        }
    }
    git(&repo, &["init", "-q", "-b", "main"]);
    git(&repo, &["add", "-A"]);
    // Packed now, as a Git server's repositories are: left to `gc --auto`, a commit of this
    // many loose objects repacks in the background while the replicas clone it.
    git(&repo, &["-c", "gc.auto=0", "commit", "-q", "-m", "fleet"]);
    git(&repo, &["gc", "-q"]);
    for i in 0..apps {
        let yaml = format!(
            "apiVersion: cd.wardn.space/v1alpha1\nkind: App\nmetadata:\n  name: a{i}\n  namespace: fleet\n\
             spec:\n  source:\n    type: Git\n    git:\n      repoURL: {}\n      branch: main\n\
             \x20     path: apps/a{i}\n      interval: 1h\n\
             \x20 destination:\n    cluster: c{}\n    namespace: bench\n\
             \x20 syncPolicy:\n    automated: true\n    prune: true\n",
            repo.display(),
            i % clusters
        );
        std::fs::write(app_dir.join(format!("a{i}.yaml")), yaml).unwrap_or_else(|e| panic!("{e}"));
    }
}
