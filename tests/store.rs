//! The store's test suite, run unchanged against SQLite and PostgreSQL.

mod support;

use sqlx::AnyPool;
use sqlx::any::AnyPoolOptions;
use support::postgres::Postgres;
use support::{Backend, TestDb, execute};
use wardn::app::{AppStatus, Phase};
use wardn::object::ObjectRef;
use wardn::store::apps::AppStatusRecord;
use wardn::store::audit::{
    self, AuditKey, AuditKeys, AuditStart, ChainError, ChainKey, Entry, KeyUsed, NewEntry, Page,
    PageQuery,
};
use wardn::store::auth::{self, ApiToken};
use wardn::store::clusters::ClusterRecord;
use wardn::store::probes::{MAX_STATUS_BYTES, ProbeRow};
use wardn::store::promotions::PromotionRecord;
use wardn::store::repositories::RepositoryRecord;
use wardn::store::users::{Role, User};
use wardn::store::{Store, StoreError};

fn record(name: &str) -> ClusterRecord {
    ClusterRecord {
        name: name.to_string(),
        server_url: format!("https://{name}.example.com:6443"),
        kubeconfig_sealed: "enc:v1:AAAA".to_string(),
        namespaces: vec!["staging".to_string(), "default".to_string()],
        credential_expires_at: None,
        created_at: "2026-01-01T00:00:00Z".to_string(),
        updated_at: "2026-01-01T00:00:00Z".to_string(),
        declared_in: None,
    }
}

async fn clusters(db: TestDb) {
    let store = Store::connect(&db.url).await.unwrap();
    store.insert_cluster(&record("staging")).await.unwrap();
    store.insert_cluster(&record("production")).await.unwrap();
    assert!(matches!(
        store.insert_cluster(&record("staging")).await,
        Err(StoreError::Duplicate(_))
    ));
    let names: Vec<String> = store
        .list_clusters()
        .await
        .unwrap()
        .into_iter()
        .map(|c| c.name)
        .collect();
    assert_eq!(names, ["production", "staging"]);
    assert_eq!(
        store.get_cluster("staging").await.unwrap(),
        Some(record("staging"))
    );
    assert_eq!(store.get_cluster("nope").await.unwrap(), None);

    let mut changed = record("staging");
    changed.namespaces = vec![];
    changed.credential_expires_at = Some("2030-01-01T00:00:00Z".to_string());
    changed.updated_at = "2026-02-01T00:00:00Z".to_string();
    changed.declared_in = Some("/etc/wardn/clusters.yaml".to_string());
    assert!(store.update_cluster(&changed).await.unwrap());
    assert_eq!(store.get_cluster("staging").await.unwrap(), Some(changed));
    assert!(!store.update_cluster(&record("nope")).await.unwrap());

    let count = store
        .reseal_clusters(|blob| Ok::<_, String>(format!("{blob}X")))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(count, 2);
    let staging = store.get_cluster("staging").await.unwrap().unwrap();
    assert_eq!(staging.kubeconfig_sealed, "enc:v1:AAAAX");
    let failed = store
        .reseal_clusters(|_| Err::<String, _>("no key"))
        .await
        .unwrap();
    assert_eq!(failed, Err("no key"));
    let staging = store.get_cluster("staging").await.unwrap().unwrap();
    assert_eq!(
        staging.kubeconfig_sealed, "enc:v1:AAAAX",
        "failed reseal changes nothing"
    );

    assert!(store.delete_cluster("staging").await.unwrap());
    assert!(!store.delete_cluster("staging").await.unwrap());
    assert_eq!(store.list_clusters().await.unwrap().len(), 1);
    store.close().await;

    // Reopening applies no migration twice and keeps the data.
    let again = Store::connect(&db.url).await.unwrap();
    assert_eq!(again.list_clusters().await.unwrap().len(), 1);
    again.close().await;
}

fn repository(id: &str, url: &str) -> RepositoryRecord {
    RepositoryRecord {
        id: id.to_string(),
        url: url.to_string(),
        auth_kind: "basic".to_string(),
        username: Some("ci".to_string()),
        secret_sealed: Some("enc:v1:AAAA".to_string()),
        webhook_secret_sealed: None,
        created_at: "2026-01-01T00:00:00Z".to_string(),
        updated_at: "2026-01-01T00:00:00Z".to_string(),
    }
}

async fn repositories(db: TestDb) {
    let store = Store::connect(&db.url).await.unwrap();
    let a = repository("aaa", "https://git.example.com/org/a");
    let b = repository("bbb", "https://git.example.com/org/b");
    store.insert_repository(&b).await.unwrap();
    store.insert_repository(&a).await.unwrap();
    assert!(matches!(
        store.insert_repository(&a).await,
        Err(StoreError::Duplicate(_))
    ));
    let same_url = repository("ccc", "https://git.example.com/org/a");
    assert!(
        matches!(
            store.insert_repository(&same_url).await,
            Err(StoreError::Duplicate(_))
        ),
        "the URL is unique too"
    );
    let urls: Vec<String> = store
        .list_repositories()
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.url)
        .collect();
    assert_eq!(
        urls,
        [
            "https://git.example.com/org/a",
            "https://git.example.com/org/b"
        ]
    );
    assert_eq!(store.get_repository("aaa").await.unwrap(), Some(a.clone()));
    assert_eq!(store.get_repository("nope").await.unwrap(), None);

    let mut rotated = a.clone();
    rotated.auth_kind = "bearer".to_string();
    rotated.username = None;
    rotated.secret_sealed = Some("enc:v1:BBBB".to_string());
    rotated.webhook_secret_sealed = Some("enc:v1:CCCC".to_string());
    rotated.updated_at = "2026-02-01T00:00:00Z".to_string();
    assert!(store.update_repository(&rotated).await.unwrap());
    assert_eq!(store.get_repository("aaa").await.unwrap(), Some(rotated));
    assert!(
        !store
            .update_repository(&repository("zzz", "https://h/z"))
            .await
            .unwrap()
    );
    assert!(store.delete_repository("aaa").await.unwrap());
    assert!(!store.delete_repository("aaa").await.unwrap());
    assert_eq!(store.list_repositories().await.unwrap().len(), 1);
    store.close().await;
}

async fn auth(db: TestDb) {
    let store = Store::connect(&db.url).await.unwrap();
    assert_eq!(store.password_hash("admin").await.unwrap(), None);
    store.upsert_user("admin", "h1", "t").await.unwrap();
    store.upsert_user("admin", "h2", "t").await.unwrap();
    assert_eq!(
        store.password_hash("admin").await.unwrap().as_deref(),
        Some("h2")
    );

    store.create_session("s1", "admin", 100).await.unwrap();
    store.create_session("s2", "admin", 50).await.unwrap();
    assert_eq!(
        store.session_user("s1", 60).await.unwrap().as_deref(),
        Some("admin")
    );
    assert_eq!(store.session_user("s2", 60).await.unwrap(), None, "expired");
    store.delete_session("s1", 60).await.unwrap();
    assert_eq!(store.session_user("s1", 60).await.unwrap(), None);

    let token = |id: &str, name: &str, created: &str| ApiToken {
        id: id.to_string(),
        name: name.to_string(),
        username: "admin".to_string(),
        created_at: created.to_string(),
        expires_at: 1_000,
        last_used_at: None,
        role: Some(Role::Deployer),
    };
    let ci = token(&auth::new_token_id().unwrap(), "ci", "2026-01-01T00:00:00Z");
    assert!(auth::is_token_id(&ci.id), "{}", ci.id);
    store.create_api_token("th", &ci).await.unwrap();
    assert_eq!(store.api_token("th").await.unwrap(), Some(ci.clone()));
    assert_eq!(store.api_token("other").await.unwrap(), None);
    // last_used_at is written at most once a minute.
    store.touch_api_token(&ci.id, 100).await.unwrap();
    store.touch_api_token(&ci.id, 130).await.unwrap();
    assert_eq!(
        store.api_token("th").await.unwrap().unwrap().last_used_at,
        Some(100)
    );
    store.touch_api_token(&ci.id, 160).await.unwrap();
    assert_eq!(
        store.api_token("th").await.unwrap().unwrap().last_used_at,
        Some(160)
    );
    let laptop = token(
        &auth::new_token_id().unwrap(),
        "laptop",
        "2026-01-02T00:00:00Z",
    );
    store.create_api_token("th2", &laptop).await.unwrap();
    let names: Vec<String> = store
        .api_tokens("admin")
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert_eq!(names, ["ci", "laptop"]);
    assert!(store.api_tokens("nobody").await.unwrap().is_empty());
    assert!(!store.delete_api_token("nobody", &ci.id).await.unwrap());
    assert!(store.delete_api_token("admin", &ci.id).await.unwrap());
    assert!(!store.delete_api_token("admin", &ci.id).await.unwrap());
    assert_eq!(store.api_token("th").await.unwrap(), None);

    // A password change ends every other session of that user, and nothing else.
    store.create_session("keep", "admin", 1_000).await.unwrap();
    store.create_session("other", "admin", 1_000).await.unwrap();
    store.create_session("bob", "bob", 1_000).await.unwrap();
    assert_eq!(
        store
            .change_password("admin", "h3", Some("keep"))
            .await
            .unwrap(),
        1
    );
    assert_eq!(
        store.session_user("keep", 60).await.unwrap().as_deref(),
        Some("admin")
    );
    assert_eq!(store.session_user("other", 60).await.unwrap(), None);
    assert_eq!(
        store.session_user("bob", 60).await.unwrap().as_deref(),
        Some("bob")
    );
    assert_eq!(
        store.password_hash("admin").await.unwrap().as_deref(),
        Some("h3")
    );
    assert!(store.api_token("th2").await.unwrap().is_some());
    store.close().await;

    // A token created before tokens had ids (migration 0004) gets an id and an expiry at the
    // next open.
    execute(
        &db.url,
        "INSERT INTO api_tokens (token_hash, name, username, created_at) \
         VALUES ('legacy', 'old', 'admin', '2025-01-01T00:00:00Z')",
    )
    .await;
    let store = Store::connect(&db.url).await.unwrap();
    let legacy = store.api_token("legacy").await.unwrap().unwrap();
    assert!(auth::is_token_id(&legacy.id), "{}", legacy.id);
    let now = jiff::Timestamp::now().as_second();
    assert!(legacy.expires_at > now + auth::DEFAULT_TOKEN_TTL_SECS - 600);
    store.close().await;
}

/// A store at migration 0004 (before roles) with the bootstrap admin, a second user and a
/// token: the roles migration makes both users admins and leaves the token without a role
/// (it acts with its user's role).
async fn roles_migration(db: TestDb) {
    execute(
        &db.url,
        concat!(
            include_str!("../migrations/0001_registry.sql"),
            include_str!("../migrations/0002_app_status.sql"),
            include_str!("../migrations/0003_repositories.sql"),
            include_str!("../migrations/0004_api_token_ids.sql"),
            "CREATE TABLE wardn_migrations (version BIGINT PRIMARY KEY, name TEXT NOT NULL);
             INSERT INTO wardn_migrations (version, name) VALUES (1, 'a'), (2, 'b'), (3, 'c'), (4, 'd');
             INSERT INTO users (username, password_hash, created_at) VALUES ('admin', 'h', 't'), ('ops', 'h', 't');
             INSERT INTO api_tokens (token_hash, id, name, username, created_at, expires_at)
               VALUES ('th', 'id1', 'ci', 'ops', 't', 99999999999);"
        ),
    )
    .await;
    let store = Store::connect(&db.url).await.unwrap();
    let users = store.users().await.unwrap();
    let roles: Vec<(&str, Role)> = users
        .iter()
        .map(|u| (u.username.as_str(), u.role))
        .collect();
    assert_eq!(roles, [("admin", Role::Admin), ("ops", Role::Admin)]);
    assert_eq!(users[0].clusters, None);
    assert_eq!(store.api_token("th").await.unwrap().unwrap().role, None);
    store.close().await;
}

/// Users: create (duplicates refused), read, update, delete with sessions and tokens; the
/// last admin is kept, also when two admins are demoted at once.
async fn users(db: TestDb) {
    let store = Store::connect(&db.url).await.unwrap();
    assert!(!store.has_users().await.unwrap());
    store.upsert_user("admin", "h", "t").await.unwrap();
    assert_eq!(
        store.user("admin").await.unwrap().unwrap().role,
        Role::Admin
    );
    let alice = User {
        username: "alice".into(),
        role: Role::Approver,
        clusters: Some(vec!["staging".into(), "local".into()]),
        email: Some("alice@example.com".into()),
        created_at: "2026-01-01T00:00:00Z".into(),
    };
    store.create_user(&alice, "h").await.unwrap();
    assert!(matches!(
        store.create_user(&alice, "h").await,
        Err(StoreError::Duplicate(_))
    ));
    assert_eq!(store.user("alice").await.unwrap(), Some(alice.clone()));
    assert_eq!(store.user("nobody").await.unwrap(), None);
    // The bootstrap upsert changes a password, never a role.
    let viewer = User {
        role: Role::Viewer,
        clusters: None,
        ..alice.clone()
    };
    assert!(store.update_user(&viewer).await.unwrap());
    store.upsert_user("alice", "h2", "t").await.unwrap();
    assert_eq!(store.user("alice").await.unwrap(), Some(viewer.clone()));
    assert!(
        !store
            .update_user(&User {
                username: "nobody".into(),
                ..viewer.clone()
            })
            .await
            .unwrap()
    );

    // The last admin can be neither demoted nor deleted.
    let demoted = User {
        username: "admin".into(),
        ..viewer.clone()
    };
    assert!(matches!(
        store.update_user(&demoted).await,
        Err(StoreError::LastAdmin(name)) if name == "admin"
    ));
    assert!(matches!(
        store.delete_user("admin").await,
        Err(StoreError::LastAdmin(_))
    ));
    assert_eq!(
        store.user("admin").await.unwrap().unwrap().role,
        Role::Admin
    );

    // Deleting a user ends its sessions and revokes its tokens, nobody else's.
    store
        .create_session("s-alice", "alice", 1_000)
        .await
        .unwrap();
    store
        .create_session("s-admin", "admin", 1_000)
        .await
        .unwrap();
    let token = ApiToken {
        id: auth::new_token_id().unwrap(),
        name: "ci".into(),
        username: "alice".into(),
        created_at: "t".into(),
        expires_at: 1_000,
        last_used_at: None,
        role: Some(Role::Viewer),
    };
    store.create_api_token("t-alice", &token).await.unwrap();
    assert!(store.delete_user("alice").await.unwrap());
    assert!(!store.delete_user("alice").await.unwrap());
    assert_eq!(store.session_user("s-alice", 60).await.unwrap(), None);
    assert_eq!(store.api_token("t-alice").await.unwrap(), None);
    assert!(store.session_user("s-admin", 60).await.unwrap().is_some());

    // Two admins demoting each other at once: exactly one demotion goes through.
    for round in 0..5 {
        let other = format!("admin{round}");
        let admin = User {
            username: other.clone(),
            role: Role::Admin,
            clusters: None,
            email: None,
            created_at: "t".into(),
        };
        store.create_user(&admin, "h").await.unwrap();
        let first = User {
            username: "admin".into(),
            ..demoted.clone()
        };
        let second = User {
            username: other.clone(),
            ..demoted.clone()
        };
        let (a, b) = tokio::join!(store.update_user(&first), store.update_user(&second));
        let refused = [&a, &b]
            .iter()
            .filter(|r| matches!(r, Err(StoreError::LastAdmin(_))))
            .count();
        assert_eq!(refused, 1, "{a:?} {b:?}");
        let admins: Vec<User> = store
            .users()
            .await
            .unwrap()
            .into_iter()
            .filter(|u| u.role == Role::Admin)
            .collect();
        assert_eq!(admins.len(), 1);
        // Back to one admin called `admin` for the next round.
        if admins[0].username != "admin" {
            assert!(store.update_user(&admin_of("admin")).await.unwrap());
            assert!(store.delete_user(&admins[0].username).await.unwrap());
        } else {
            assert!(store.delete_user(&other).await.unwrap());
        }
    }
    store.close().await;
}

fn admin_of(name: &str) -> User {
    User {
        username: name.into(),
        role: Role::Admin,
        clusters: None,
        email: None,
        created_at: "t".into(),
    }
}

fn entry(action: &str, target: &str) -> NewEntry {
    NewEntry {
        actor: "admin".to_string(),
        action: action.to_string(),
        target: target.to_string(),
        outcome: "success".to_string(),
    }
}

fn keys(current: u8, previous: Option<u8>) -> AuditKeys {
    AuditKeys {
        current: AuditKey::new([current; 32]),
        previous: previous.map(|p| AuditKey::new([p; 32])),
    }
}

/// A raw connection, as an attacker with write access to the database has.
async fn raw(url: &str) -> AnyPool {
    sqlx::any::install_default_drivers();
    AnyPoolOptions::new()
        .max_connections(1)
        .connect(url)
        .await
        .unwrap()
}

/// What an attacker without the key can do: re-chain every entry from `from` on with plain
/// SHA-256 and move the stored head to the new last entry.
async fn forge_rechain(url: &str, from: i64) {
    let pool = raw(url).await;
    let entries: Vec<Entry> = sqlx::query_as(
        "SELECT seq, at, actor, action, target, outcome, prev_hash, hash FROM audit_log ORDER BY seq",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    let mut prev = audit::GENESIS_HASH.to_string();
    for e in &entries {
        if e.seq >= from {
            let fields = NewEntry {
                actor: e.actor.clone(),
                action: e.action.clone(),
                target: e.target.clone(),
                outcome: e.outcome.clone(),
            };
            let hash = audit::entry_mac(ChainKey::Legacy, e.seq, &e.at, &fields, &prev);
            sqlx::query("UPDATE audit_log SET prev_hash = $1, hash = $2 WHERE seq = $3")
                .bind(&prev)
                .bind(&hash)
                .bind(e.seq)
                .execute(&pool)
                .await
                .unwrap();
            prev = hash;
        } else {
            prev = e.hash.clone();
        }
    }
    let last = entries.last().map_or(0, |e| e.seq);
    sqlx::query("UPDATE audit_head SET seq = $1, hash = $2 WHERE id = 1")
        .bind(last)
        .bind(&prev)
        .execute(&pool)
        .await
        .unwrap();
    pool.close().await;
}

async fn append_six(store: &Store) {
    for (i, (action, actor, target)) in [
        ("cluster.register", "admin", "a"),
        ("cluster.update", "admin", "a"),
        ("repository.add", "token:ci", "r"),
        ("cluster.remove", "alice", "a"),
        ("app.sync", "alice", "local/web"),
        ("cluster.register", "token:ci", "b"),
    ]
    .iter()
    .enumerate()
    {
        let written = store
            .append_audit(
                &NewEntry {
                    actor: actor.to_string(),
                    action: action.to_string(),
                    target: target.to_string(),
                    outcome: "success".to_string(),
                },
                &format!("2026-01-0{}T00:00:00Z", i + 1),
            )
            .await
            .unwrap();
        assert_eq!(written.seq, i as i64 + 1);
    }
}

async fn audit_chain(db: TestDb) {
    let store = Store::connect(&db.url).await.unwrap();
    let k1 = keys(1, None);
    assert!(matches!(
        store.init_audit(k1.clone()).await.unwrap(),
        AuditStart::Intact(_)
    ));
    assert_eq!(
        store
            .verify_audit(&k1, None)
            .await
            .unwrap()
            .unwrap()
            .entries,
        0
    );
    append_six(&store).await;
    let (entries, _) = store.audit_log().await.unwrap();
    assert_eq!(entries[1].prev_hash, entries[0].hash);
    let verified = store.verify_audit(&k1, None).await.unwrap().unwrap();
    assert_eq!(verified.entries, 6);
    assert_eq!(verified.key, KeyUsed::Current);
    let expect = store.audit_head().unwrap();
    assert_eq!(verified.head.as_ref(), Some(&expect));
    assert_eq!(
        store.verify_audit(&k1, Some(&expect)).await.unwrap(),
        Ok(verified)
    );
    // A wrong key fails at the first entry.
    assert_eq!(
        store.verify_audit(&keys(2, None), None).await.unwrap(),
        Err(ChainError::Changed { seq: 1 })
    );

    // The newest entries deleted and the head moved: intact on its own, truncated against the
    // head recorded elsewhere.
    execute(&db.url, "DELETE FROM audit_log WHERE seq > 4").await;
    let pool = raw(&db.url).await;
    sqlx::query("UPDATE audit_head SET seq = 4, hash = (SELECT hash FROM audit_log WHERE seq = 4) WHERE id = 1")
        .execute(&pool)
        .await
        .unwrap();
    pool.close().await;
    store.verify_audit(&k1, None).await.unwrap().unwrap();
    let truncated = store.verify_audit(&k1, Some(&expect)).await.unwrap();
    assert_eq!(truncated, Err(ChainError::Truncated { last: 4, head: 6 }));

    // An edited entry re-chained with plain SHA-256 is named.
    execute(
        &db.url,
        "UPDATE audit_log SET actor = 'mallory' WHERE seq = 2",
    )
    .await;
    forge_rechain(&db.url, 2).await;
    assert_eq!(
        store.verify_audit(&k1, None).await.unwrap(),
        Err(ChainError::Changed { seq: 2 })
    );
    // A deleted middle entry is named.
    execute(&db.url, "DELETE FROM audit_log WHERE seq = 1").await;
    assert_eq!(
        store.verify_audit(&k1, None).await.unwrap(),
        Err(ChainError::Broken { seq: 1 })
    );
    store.close().await;
}

/// A legacy SHA-256 log is verified and re-chained under the key at start-up (audited); a
/// broken legacy log is left as it is and reported.
async fn audit_legacy_migration(db: TestDb) {
    let store = Store::connect(&db.url).await.unwrap();
    store.init_audit(keys(1, None)).await.unwrap();
    append_six(&store).await;
    store.close().await;
    // Make it what an older wardn wrote: an unkeyed SHA-256 chain.
    forge_rechain(&db.url, 1).await;

    let store = Store::connect(&db.url).await.unwrap();
    assert_eq!(
        store.init_audit(keys(1, None)).await.unwrap(),
        AuditStart::Migrated { entries: 6 }
    );
    let verified = store
        .verify_audit(&keys(1, None), None)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(verified.entries, 7);
    let (entries, _) = store.audit_log().await.unwrap();
    assert_eq!(entries[6].action, "audit.rechain");
    assert_eq!(entries[6].target, "legacy SHA-256 chain");
    assert_eq!(
        entries[6].outcome,
        "success: 6 entries re-chained under the current key"
    );
    store.close().await;

    // A legacy log edited before the upgrade is not laundered by the re-chain.
    let other = Store::connect(&db.url).await.unwrap();
    forge_rechain(&db.url, 1).await;
    execute(&db.url, "UPDATE audit_log SET target = 'x' WHERE seq = 3").await;
    let start = other.init_audit(keys(1, None)).await.unwrap();
    assert_eq!(start, AuditStart::Broken(ChainError::Changed { seq: 3 }));
    let pool = raw(&db.url).await;
    let target: String = sqlx::query_scalar("SELECT target FROM audit_log WHERE seq = 3")
        .fetch_one(&pool)
        .await
        .unwrap();
    pool.close().await;
    assert_eq!(target, "x", "left as it was");
    other.close().await;
}

/// A rotation: the chain under the previous key keeps verifying and growing under it, and
/// `rechain_audit` moves it to the current key (audited); the old key then fails.
async fn audit_rotation(db: TestDb) {
    let store = Store::connect(&db.url).await.unwrap();
    store.init_audit(keys(1, None)).await.unwrap();
    append_six(&store).await;
    store.close().await;

    let store = Store::connect(&db.url).await.unwrap();
    let rotating = keys(2, Some(1));
    assert!(matches!(
        store.init_audit(rotating.clone()).await.unwrap(),
        AuditStart::UnderPreviousKey(_)
    ));
    store
        .record_audit(
            "alice",
            "app.sync",
            "local/web",
            "success",
            "2026-02-01T00:00:00Z",
        )
        .await;
    let verified = store.verify_audit(&rotating, None).await.unwrap().unwrap();
    assert_eq!((verified.entries, verified.key), (7, KeyUsed::Previous));
    assert_eq!(store.rechain_audit("admin").await.unwrap(), 7);
    assert_eq!(
        store.rechain_audit("admin").await.unwrap(),
        0,
        "already current"
    );
    let verified = store
        .verify_audit(&keys(2, None), None)
        .await
        .unwrap()
        .unwrap();
    assert_eq!((verified.entries, verified.key), (8, KeyUsed::Current));
    assert_eq!(
        store.verify_audit(&keys(1, None), None).await.unwrap(),
        Err(ChainError::Changed { seq: 1 })
    );
    let (entries, _) = store.audit_log().await.unwrap();
    assert_eq!(
        (
            entries[7].action.as_str(),
            entries[7].actor.as_str(),
            entries[7].target.as_str()
        ),
        ("audit.rechain", "admin", "previous key")
    );
    store.close().await;
}

async fn audit_pages(db: TestDb) {
    let store = Store::connect(&db.url).await.unwrap();
    store.init_audit(keys(1, None)).await.unwrap();
    append_six(&store).await;
    let seqs = |page: &Page| page.entries.iter().map(|e| e.seq).collect::<Vec<_>>();
    let all = store.audit_page(&PageQuery::default()).await.unwrap();
    assert_eq!(seqs(&all), [1, 2, 3, 4, 5, 6]);
    assert_eq!(all.next_before, None);
    let query = |limit, before| PageQuery {
        limit: Some(limit),
        before,
        ..Default::default()
    };
    let newest = store.audit_page(&query(4, None)).await.unwrap();
    assert_eq!(seqs(&newest), [3, 4, 5, 6]);
    assert_eq!(newest.next_before, Some(3));
    let older = store.audit_page(&query(4, Some(3))).await.unwrap();
    assert_eq!(seqs(&older), [1, 2]);
    assert_eq!(older.next_before, None);
    let capped = store.audit_page(&query(1_000_000, None)).await.unwrap();
    assert_eq!(capped.entries.len(), 6);
    let filter = |action: Option<&str>, actor: Option<&str>, target: Option<&str>| PageQuery {
        action: action.map(str::to_string),
        actor: actor.map(str::to_string),
        target: target.map(str::to_string),
        ..Default::default()
    };
    let prefix = store
        .audit_page(&filter(Some("cluster."), None, None))
        .await
        .unwrap();
    assert_eq!(seqs(&prefix), [1, 2, 4, 6]);
    let exact = store
        .audit_page(&filter(Some("cluster.register"), None, None))
        .await
        .unwrap();
    assert_eq!(seqs(&exact), [1, 6]);
    let not_prefix = store
        .audit_page(&filter(Some("cluster"), None, None))
        .await
        .unwrap();
    assert!(not_prefix.entries.is_empty(), "without the dot it is exact");
    let wildcard = store
        .audit_page(&filter(Some("%."), None, None))
        .await
        .unwrap();
    assert!(wildcard.entries.is_empty(), "LIKE wildcards are literal");
    let by_actor = store
        .audit_page(&filter(None, Some("token:ci"), None))
        .await
        .unwrap();
    assert_eq!(seqs(&by_actor), [3, 6]);
    let combined = store
        .audit_page(&filter(Some("cluster."), Some("admin"), Some("a")))
        .await
        .unwrap();
    assert_eq!(seqs(&combined), [1, 2]);
    store.close().await;
}

fn app_status_record(key: &str, phase: Phase, plan_hash: &str) -> AppStatusRecord<AppStatus> {
    AppStatusRecord {
        key: key.to_string(),
        cluster: "staging".to_string(),
        name: key.rsplit('/').next().unwrap().to_string(),
        status: AppStatus {
            phase: Some(phase),
            plan_hash: Some(plan_hash.to_string()),
            held_at: Some("2026-01-01T00:00:00Z".to_string()),
            inventory: vec![ObjectRef {
                api_version: "v1".to_string(),
                kind: "ConfigMap".to_string(),
                namespace: Some("staging".to_string()),
                name: "cm".to_string(),
            }],
            ..Default::default()
        },
        updated_at: "2026-01-01T00:00:00Z".to_string(),
    }
}

async fn app_statuses(db: TestDb) {
    let store = Store::connect(&db.url).await.unwrap();
    assert!(store.app_statuses::<AppStatus>().await.unwrap().is_empty());
    let held = app_status_record("team/web", Phase::Held, "abc");
    store.put_app_status(&held).await.unwrap();
    store
        .put_app_status(&app_status_record("team/api", Phase::Synced, "def"))
        .await
        .unwrap();
    let replaced = app_status_record("team/api", Phase::Failed, "ghi");
    store.put_app_status(&replaced).await.unwrap();
    assert_eq!(
        store.app_statuses::<AppStatus>().await.unwrap(),
        [replaced.clone(), held.clone()]
    );
    // One App's status, as a replica that does not own it reads it.
    assert_eq!(
        store.app_status::<AppStatus>("team/api").await.unwrap(),
        Some(replaced.clone())
    );
    assert_eq!(
        store.app_status::<AppStatus>("team/none").await.unwrap(),
        None
    );
    assert!(store.delete_app_status("team/api").await.unwrap());
    assert!(!store.delete_app_status("team/api").await.unwrap());
    assert_eq!(
        store.app_status::<AppStatus>("team/api").await.unwrap(),
        None
    );
    store.close().await;

    // A reopened store has the statuses; a corrupt one is an error naming the column.
    let again = Store::connect(&db.url).await.unwrap();
    assert_eq!(again.app_statuses::<AppStatus>().await.unwrap(), [held]);
    execute(&db.url, "UPDATE app_status SET status = 'nope'").await;
    let e = again
        .app_statuses::<AppStatus>()
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("app_status.status"), "{e}");
    let e = again
        .app_status::<AppStatus>("team/web")
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("app_status.status"), "{e}");
    again.close().await;
}

/// Audit appends racing status writes (as a busy daemon does) lose no entry: every append
/// takes the write lock up front instead of failing to upgrade a read snapshot.
/// Two stores on one database stand for two server replicas: they migrate a fresh database at
/// once, then append to one audit chain concurrently (with status writes in between); the
/// chain stays linear and verifies (on PostgreSQL the appends are serialised by the database).
async fn concurrent_writes(db: TestDb) {
    let (first, second) = tokio::join!(Store::connect(&db.url), Store::connect(&db.url));
    let (store, other) = (first.unwrap(), second.unwrap());
    store.init_audit(keys(1, None)).await.unwrap();
    other.init_audit(keys(1, None)).await.unwrap();
    let mut tasks = Vec::new();
    for i in 0..30 {
        for (replica, audit) in [("a", store.clone()), ("b", other.clone())] {
            tasks.push(tokio::spawn(async move {
                audit
                    .append_audit(
                        &entry("app.sync", &format!("local/app-{i}-{replica}")),
                        "2026-01-01T00:00:00Z",
                    )
                    .await
                    .map(|_| ())
            }));
        }
        let status = store.clone();
        tasks.push(tokio::spawn(async move {
            status
                .put_app_status(&app_status_record(
                    &format!("team/app-{i}"),
                    Phase::Synced,
                    "h",
                ))
                .await
                .map(|_| ())
        }));
    }
    for task in tasks {
        task.await.unwrap().unwrap();
    }
    let (entries, _) = store.audit_log().await.unwrap();
    assert_eq!(entries.len(), 60);
    let verified = other.verify_audit(&keys(1, None), None).await.unwrap();
    assert_eq!(verified.map(|v| v.entries), Ok(60));
    other.close().await;
    store.close().await;
}

/// Replicas follow the statuses their peers write: only those written at or after a time.
async fn statuses_since(db: TestDb) {
    let store = Store::connect(&db.url).await.unwrap();
    for (key, at) in [
        ("team/old", "2026-01-01T00:00:00Z"),
        ("team/new", "2026-01-01T00:01:00Z"),
    ] {
        let mut record = app_status_record(key, Phase::Synced, "h");
        record.updated_at = at.to_string();
        store.put_app_status(&record).await.unwrap();
    }
    let since_then = |since: &'static str| {
        let store = store.clone();
        async move {
            let mut read = Vec::new();
            store
                .each_app_status::<AppStatus>(Some(since), |r| read.push(r))
                .await
                .unwrap();
            read
        }
    };
    let since = since_then("2026-01-01T00:00:30Z").await;
    assert_eq!(since.len(), 1);
    assert_eq!(since[0].key, "team/new");
    let all = since_then("2026-01-01T00:00:00Z").await;
    assert_eq!(all.len(), 2, "the bound is inclusive");
    store.close().await;
}

/// A replica reloads the whole fleet's statuses row by row, as stored text: 1,000 rows come
/// in key order, each reading back as the status written; a row that is not JSON stops the
/// reload with an error naming the column, after the rows before it.
async fn statuses_streamed(db: TestDb) {
    let store = Store::connect(&db.url).await.unwrap();
    let written: Vec<_> = (0..1_000)
        .map(|i| app_status_record(&format!("team/app-{i:04}"), Phase::Synced, &format!("h{i}")))
        .collect();
    for record in written.iter().rev() {
        store.put_app_status(record).await.unwrap();
    }
    let mut read = Vec::new();
    let count = store
        .each_app_status::<Box<serde_json::value::RawValue>>(None, |record| read.push(record))
        .await
        .unwrap();
    assert_eq!(count, 1_000);
    for (stored, expected) in read.iter().zip(&written) {
        assert_eq!(stored.key, expected.key);
        let status: AppStatus = serde_json::from_str(stored.status.get()).unwrap();
        assert_eq!(status, expected.status);
    }
    execute(
        &db.url,
        "UPDATE app_status SET status = '{\"phase\": ' WHERE app_key = 'team/app-0500'",
    )
    .await;
    let mut handed = 0;
    let e = store
        .each_app_status::<Box<serde_json::value::RawValue>>(None, |_| handed += 1)
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("app_status.status"), "{e}");
    assert_eq!(handed, 500);
    store.close().await;
}

/// Operations handed between replicas: exactly one claim wins, the outcome reads back, the
/// row goes when deleted, and stale rows go.
async fn app_requests(db: TestDb) {
    let store = Store::connect(&db.url).await.unwrap();
    let other = Store::connect(&db.url).await.unwrap();
    store
        .insert_app_request(
            "r1",
            "team/app",
            "approve",
            Some("sha256:abc"),
            "2026-01-01T00:00:00Z",
        )
        .await
        .unwrap();
    let duplicate = store
        .insert_app_request("r1", "team/app", "reject", None, "2026-01-01T00:00:01Z")
        .await;
    assert!(
        matches!(duplicate, Err(StoreError::Duplicate(_))),
        "{duplicate:?}"
    );
    let open = other.open_app_requests().await.unwrap();
    assert_eq!(open.len(), 1);
    assert_eq!(open[0].plan_hash.as_deref(), Some("sha256:abc"));
    let (a, b) = tokio::join!(
        store.claim_app_request("r1", "replica-a"),
        other.claim_app_request("r1", "replica-b")
    );
    assert!(a.unwrap() ^ b.unwrap(), "exactly one claim wins");
    assert!(store.open_app_requests().await.unwrap().is_empty());
    other
        .finish_app_request("r1", "{\"ok\":true}", "2026-01-01T00:00:02Z")
        .await
        .unwrap();
    let done = store.app_request("r1").await.unwrap().unwrap();
    assert_eq!(done.outcome.as_deref(), Some("{\"ok\":true}"));
    store.delete_app_request("r1").await.unwrap();
    assert_eq!(store.app_request("r1").await.unwrap(), None);
    // The 1,000th hand-over leaves nothing behind: every request is deleted once answered.
    for i in 0..1000 {
        let id = format!("long-{i}");
        store
            .insert_app_request(&id, "team/app", "approve", None, "2026-01-01T00:00:00Z")
            .await
            .unwrap();
        assert!(other.claim_app_request(&id, "replica-b").await.unwrap());
        assert!(!store.claim_app_request(&id, "replica-a").await.unwrap());
        other
            .finish_app_request(&id, "{}", "2026-01-01T00:00:01Z")
            .await
            .unwrap();
        store.delete_app_request(&id).await.unwrap();
    }
    assert!(store.open_app_requests().await.unwrap().is_empty());
    assert_eq!(store.app_request("long-999").await.unwrap(), None);
    // Requests whose asker died (claimed and answered, or never claimed) go once stale.
    for (id, at) in [
        ("old", "2026-01-01T00:00:00Z"),
        ("new", "2026-01-01T02:00:00Z"),
    ] {
        store
            .insert_app_request(id, "team/app", "approve", None, at)
            .await
            .unwrap();
    }
    assert!(other.claim_app_request("old", "replica-b").await.unwrap());
    let deleted = other
        .delete_app_requests_before("2026-01-01T01:00:00Z")
        .await
        .unwrap();
    assert_eq!(deleted, 1);
    assert_eq!(store.app_request("old").await.unwrap(), None);
    assert!(store.app_request("new").await.unwrap().is_some());
    other.close().await;
    store.close().await;
}

fn promotion(target: &str, outcome: &str) -> PromotionRecord<Vec<String>> {
    PromotionRecord {
        id: 0,
        target_key: target.to_string(),
        target: format!("production/{target}"),
        source: "staging/web".to_string(),
        revision: "r1".to_string(),
        images: vec![format!("ghcr.io/acme/web@sha256:{}", "a".repeat(64))],
        actor: "admin".to_string(),
        created_at: "2026-12-01T15:00:00Z".to_string(),
        plan_hash: String::new(),
        outcome: outcome.to_string(),
    }
}

/// Promotion records: ids in order (distinct under concurrent inserts), finished in place,
/// listed per target newest first; a corrupt images column is reported, not a panic.
async fn promotions(db: TestDb) {
    let store = Store::connect(&db.url).await.unwrap();
    let first = store
        .insert_promotion(&promotion("org/web", "pending"))
        .await
        .unwrap();
    assert_eq!(first, 1);
    let mut done = promotion("org/web", "Held");
    done.id = first;
    done.plan_hash = "h1".to_string();
    done.revision = "r2".to_string();
    store.finish_promotion(&done).await.unwrap();
    assert_eq!(store.promotion(first).await.unwrap(), Some(done.clone()));
    assert_eq!(store.promotion::<Vec<String>>(99).await.unwrap(), None);
    // An approval is recorded once, on a Held record only.
    assert!(
        store
            .decide_promotion(first, "Approved: Synced")
            .await
            .unwrap()
    );
    assert!(
        !store
            .decide_promotion(first, "Rejected: OutOfSync")
            .await
            .unwrap()
    );
    assert!(
        !store
            .decide_promotion(99, "Approved: Synced")
            .await
            .unwrap()
    );
    done.outcome = "Approved: Synced".to_string();
    assert_eq!(store.promotion(first).await.unwrap(), Some(done.clone()));

    let mut tasks = Vec::new();
    for i in 0..16 {
        let store = store.clone();
        let target = if i % 2 == 0 { "org/web" } else { "org/api" };
        tasks.push(tokio::spawn(async move {
            store.insert_promotion(&promotion(target, "pending")).await
        }));
    }
    let mut ids = Vec::new();
    for task in tasks {
        ids.push(task.await.unwrap().unwrap());
    }
    ids.sort();
    assert_eq!(ids, (2..=17).collect::<Vec<i64>>());
    let web: Vec<PromotionRecord<Vec<String>>> = store.promotions("org/web").await.unwrap();
    assert_eq!(web.len(), 9);
    assert!(web.windows(2).all(|w| w[0].id > w[1].id), "newest first");
    assert_eq!(web.last(), Some(&done));
    assert!(
        store
            .promotions::<Vec<String>>("org/none")
            .await
            .unwrap()
            .is_empty()
    );

    execute(
        &db.url,
        "UPDATE promotions SET images = 'not json' WHERE id = 1",
    )
    .await;
    let e = store
        .promotion::<Vec<String>>(1)
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("promotions.images"), "{e}");
    store.close().await;
}

/// The shared probe rows: a claim is taken once per due time, a slow probe's older result never
/// replaces a newer one, an oversized result is refused, and rows of removed clusters go.
async fn cluster_probes(db: TestDb) {
    let store = Store::connect(&db.url).await.unwrap();
    let other = Store::connect(&db.url).await.unwrap();
    store.insert_cluster(&record("staging")).await.unwrap();
    // The first claim inserts the row; a second claim of the same round fails, from any store.
    assert!(store.claim_probe("staging", 1_000, 26_000).await.unwrap());
    assert!(!other.claim_probe("staging", 1_000, 26_000).await.unwrap());
    assert!(!store.claim_probe("staging", 25_999, 51_000).await.unwrap());
    assert!(other.claim_probe("staging", 26_000, 51_000).await.unwrap());
    // Results: the later one stays, whatever order they arrive in.
    store
        .record_probe("staging", "{\"late\":1}", 30_000)
        .await
        .unwrap();
    other
        .record_probe("staging", "{\"early\":1}", 29_000)
        .await
        .unwrap();
    let row = |status: &str, probed_ms| ProbeRow {
        name: "staging".into(),
        due_ms: 51_000,
        status: Some(status.into()),
        probed_ms,
    };
    assert_eq!(
        other.probe_rows().await.unwrap(),
        [row("{\"late\":1}", 30_000)]
    );
    // A careless caller: a result beyond the bound is refused and nothing changes.
    let huge = "x".repeat(MAX_STATUS_BYTES + 1);
    let refused = store.record_probe("staging", &huge, 40_000).await;
    assert!(
        matches!(&refused, Err(StoreError::Corrupt { field, reason })
            if *field == "cluster_probes.status" && reason.contains("staging")),
        "{refused:?}"
    );
    assert_eq!(
        store.probe_rows().await.unwrap(),
        [row("{\"late\":1}", 30_000)]
    );
    // Scheduling never moves an existing row; it creates a missing one.
    store.schedule_probe("staging", 0).await.unwrap();
    store.schedule_probe("gone", 7).await.unwrap();
    let rows = store.probe_rows().await.unwrap();
    assert_eq!(rows.len(), 2);
    assert_eq!((rows[0].name.as_str(), rows[0].due_ms), ("gone", 7));
    assert_eq!(rows[1], row("{\"late\":1}", 30_000));
    // A result recorded outside a round makes its row due at once (for the expected prober).
    store.record_probe("fresh", "{}", 12_345).await.unwrap();
    let fresh = store.probe_rows().await.unwrap().remove(0);
    assert_eq!(
        (fresh.name.as_str(), fresh.due_ms, fresh.probed_ms),
        ("fresh", 12_345, 12_345)
    );
    // Rows of clusters that are not registered go; forgetting drops one.
    assert_eq!(store.prune_probes().await.unwrap(), 2);
    store.forget_probe("staging").await.unwrap();
    assert!(store.probe_rows().await.unwrap().is_empty());
}

async fn suite(backend: Backend<'_>) {
    promotions(backend.database("promotions_case")).await;
    app_statuses(backend.database("app_status_case")).await;
    clusters(backend.database("clusters_case")).await;
    auth(backend.database("auth_case")).await;
    users(backend.database("users_case")).await;
    roles_migration(backend.database("roles_migration_case")).await;
    repositories(backend.database("repositories_case")).await;
    audit_chain(backend.database("audit_case")).await;
    audit_legacy_migration(backend.database("audit_legacy_case")).await;
    audit_rotation(backend.database("audit_rotation_case")).await;
    audit_pages(backend.database("audit_pages_case")).await;
    concurrent_writes(backend.database("concurrent_case")).await;
    app_requests(backend.database("app_requests_case")).await;
    statuses_since(backend.database("statuses_since_case")).await;
    statuses_streamed(backend.database("statuses_streamed_case")).await;
    cluster_probes(backend.database("cluster_probes_case")).await;
    git_pushes(backend.database("git_pushes_case")).await;
    operator_apps(backend.database("operator_apps_case")).await;
}

/// Apps the operators report: each operator's report replaces its rows (an App it stopped
/// reporting goes, one another operator took over moves) and writes only the rows that
/// differ; the version changes with every change and not with a report that changes nothing;
/// a heartbeat keeps an operator listed only while it names the digest of its last report
/// and that report has not expired; an operator that goes silent has its Apps expire; and a
/// long run of reports and heartbeats keeps one row per App.
async fn operator_apps(db: TestDb) {
    use wardn::store::operator_apps::REPORTED_FOR_MS;
    let store = Store::connect(&db.url).await.unwrap();
    let other = Store::connect(&db.url).await.unwrap();
    let app = |key: &str, rev: u32| (key.to_string(), format!(r#"{{"key":"{key}","rev":{rev}}}"#));
    let t0 = 5_000_000;
    let written = store
        .report_operator_apps("op-a", "d-a1", &[app("fleet/a", 1), app("fleet/b", 1)], t0)
        .await
        .unwrap();
    assert_eq!(written, 2);
    other
        .report_operator_apps("op-b", "d-b1", &[app("fleet/c", 1)], t0 + 10)
        .await
        .unwrap();
    let rows = store.operator_apps(0).await.unwrap();
    let seen: Vec<(&str, &str)> = rows
        .iter()
        .map(|r| (r.app_key.as_str(), r.operator.as_str()))
        .collect();
    assert_eq!(
        seen,
        [
            ("fleet/a", "op-a"),
            ("fleet/b", "op-a"),
            ("fleet/c", "op-b")
        ]
    );
    assert_eq!(rows[0].app, r#"{"key":"fleet/a","rev":1}"#);
    let v1 = store.operator_apps_version(0).await.unwrap();
    assert_eq!(v1.reported, 3);
    // The same report later writes no App row, and the version stays.
    let written = store
        .report_operator_apps(
            "op-a",
            "d-a1",
            &[app("fleet/a", 1), app("fleet/b", 1)],
            t0 + 1000,
        )
        .await
        .unwrap();
    assert_eq!(written, 0);
    assert_eq!(other.operator_apps_version(0).await.unwrap(), v1);
    // Heartbeats: the digest of the operator's last report keeps it listed; another digest,
    // an operator never reported, or a digest of another operator's report does not.
    assert!(
        other
            .operator_heartbeat("op-a", "d-a1", t0 + 1500)
            .await
            .unwrap()
    );
    assert!(
        !other
            .operator_heartbeat("op-a", "d-a0", t0 + 1500)
            .await
            .unwrap()
    );
    assert!(
        !other
            .operator_heartbeat("op-z", "d-a1", t0 + 1500)
            .await
            .unwrap()
    );
    assert!(
        !other
            .operator_heartbeat("op-b", "d-a1", t0 + 1500)
            .await
            .unwrap()
    );
    assert_eq!(other.operator_apps_version(0).await.unwrap(), v1);
    // A changed App changes it and is the one row written; so does one that moved to
    // another operator.
    let written = store
        .report_operator_apps(
            "op-a",
            "d-a2",
            &[app("fleet/a", 2), app("fleet/b", 1)],
            t0 + 2000,
        )
        .await
        .unwrap();
    assert_eq!(written, 1);
    let v2 = store.operator_apps_version(0).await.unwrap();
    assert_ne!(v2, v1);
    assert!(
        !store
            .operator_heartbeat("op-a", "d-a1", t0 + 2100)
            .await
            .unwrap()
    );
    other
        .report_operator_apps(
            "op-b",
            "d-b2",
            &[app("fleet/b", 1), app("fleet/c", 1)],
            t0 + 2500,
        )
        .await
        .unwrap();
    let v3 = store.operator_apps_version(0).await.unwrap();
    assert_ne!(v3, v2);
    // op-a no longer reports fleet/b: its report deletes only its own rows.
    store
        .report_operator_apps("op-a", "d-a3", &[app("fleet/a", 2)], t0 + 3000)
        .await
        .unwrap();
    let owners: Vec<(String, String)> = store
        .operator_apps(0)
        .await
        .unwrap()
        .into_iter()
        .map(|r| (r.app_key, r.operator))
        .collect();
    assert_eq!(
        owners,
        [
            ("fleet/a".to_string(), "op-a".to_string()),
            ("fleet/b".into(), "op-b".into()),
            ("fleet/c".into(), "op-b".into())
        ]
    );
    // An empty report drops all of an operator's Apps.
    other
        .report_operator_apps("op-b", "d-b3", &[], t0 + 3500)
        .await
        .unwrap();
    assert_eq!(store.operator_apps(0).await.unwrap().len(), 1);
    // Read from a time on: an operator not heard from is not listed.
    assert!(store.operator_apps(t0 + 3001).await.unwrap().is_empty());
    assert_eq!(
        store
            .operator_apps_version(t0 + 3001)
            .await
            .unwrap()
            .reported,
        0
    );
    // A heartbeat keeps it listed; once expired, a heartbeat no longer revives it, and its
    // rows go with the next report of any operator.
    assert!(
        store
            .operator_heartbeat("op-a", "d-a3", t0 + 4000)
            .await
            .unwrap()
    );
    assert_eq!(store.operator_apps(t0 + 3001).await.unwrap().len(), 1);
    // Who was heard from since when, a heartbeat included.
    assert_eq!(
        other.operators_heard(t0 + 3001).await.unwrap(),
        [
            ("op-a".to_string(), t0 + 4000),
            ("op-b".to_string(), t0 + 3500)
        ]
    );
    assert_eq!(
        other.operators_heard(t0 + 3600).await.unwrap(),
        [("op-a".to_string(), t0 + 4000)]
    );
    let late = t0 + 4000 + REPORTED_FOR_MS + 1;
    assert!(
        !store
            .operator_heartbeat("op-a", "d-a3", late)
            .await
            .unwrap()
    );
    other
        .report_operator_apps("op-b", "d-b4", &[app("fleet/c", 1)], late)
        .await
        .unwrap();
    let left = store.operator_apps(0).await.unwrap();
    assert_eq!(left.len(), 1);
    assert_eq!(left[0].app_key, "fleet/c");
    // Its full report brings it back.
    store
        .report_operator_apps("op-a", "d-a3", &[app("fleet/a", 2)], late + 1)
        .await
        .unwrap();
    assert_eq!(store.operator_apps(late - 1).await.unwrap().len(), 2);
    // Long run: a thousand reports of a hundred Apps, one changing each time, each followed
    // by a heartbeat, write one row each, keep a hundred rows, and change the version every
    // time.
    let mut last = store.operator_apps_version(0).await.unwrap();
    let base = late + 10 * REPORTED_FOR_MS;
    for round in 0..1000u32 {
        let apps: Vec<(String, String)> = (0..100u32)
            .map(|i| {
                app(
                    &format!("fleet/app-{i:03}"),
                    if i == round % 100 { round } else { 0 },
                )
            })
            .collect();
        let digest = format!("d-long-{round}");
        let now = base + 2 * i64::from(round);
        let written = store
            .report_operator_apps("op-long", &digest, &apps, now)
            .await
            .unwrap();
        // The first report writes every row; round 1 changes app-001 alone (app-000 was 0
        // already); from then on one App changes and the last round's goes back to 0.
        let expected = match round {
            0 => 100,
            1 => 1,
            _ => 2,
        };
        assert_eq!(written, expected, "round {round}");
        assert!(
            store
                .operator_heartbeat("op-long", &digest, now + 1)
                .await
                .unwrap()
        );
        let version = store.operator_apps_version(0).await.unwrap();
        assert_ne!(version, last, "round {round}");
        last = version;
    }
    assert_eq!(
        store
            .operator_apps(base)
            .await
            .unwrap()
            .iter()
            .filter(|r| r.operator == "op-long")
            .count(),
        100
    );
    store.close().await;
    other.close().await;
}

/// Pushes recorded for the operators: one row per repository (its latest push, with a new
/// id), read oldest first from a time on, by any store of the database; a careless caller's
/// over-long key is refused and changes nothing; a long run of eleven thousand repositories
/// keeps at most `MAX_ROWS` (the newest), and pushes older than ten minutes go.
async fn git_pushes(db: TestDb) {
    use wardn::store::pushes::{KEEP_MS, MAX_REPOSITORY_BYTES, MAX_ROWS};
    let store = Store::connect(&db.url).await.unwrap();
    let other = Store::connect(&db.url).await.unwrap();
    let first = store
        .record_push(&["https://git.example/a"], 1_000_000)
        .await
        .unwrap()
        .remove(0);
    other
        .record_push(&["https://git.example/b"], 1_000_500)
        .await
        .unwrap();
    let again = other
        .record_push(&["https://git.example/a"], 1_001_000)
        .await
        .unwrap()
        .remove(0);
    assert_ne!(first, again, "each push has its own id");
    assert_eq!(again.len(), 16);
    let rows = store.pushes_since(0, 1000).await.unwrap();
    let seen: Vec<(&str, i64)> = rows
        .iter()
        .map(|r| (r.repository.as_str(), r.pushed_ms))
        .collect();
    assert_eq!(
        seen,
        [
            ("https://git.example/b", 1_000_500),
            ("https://git.example/a", 1_001_000)
        ]
    );
    assert_eq!(rows[1].push_id, again);
    assert_eq!(store.pushes_since(1_000_600, 1000).await.unwrap().len(), 1);
    assert_eq!(store.pushes_since(0, 1).await.unwrap().len(), 1);
    // Hostile: an over-long key is refused, and nothing changes (not even the well-formed
    // spelling recorded beside it).
    let long = "x".repeat(MAX_REPOSITORY_BYTES + 1);
    let refused = store
        .record_push(&["https://git.example/d", &long], 1_002_000)
        .await;
    assert!(
        refused
            .unwrap_err()
            .to_string()
            .contains("git_pushes.repository")
    );
    assert_eq!(store.pushes_since(0, 1000).await.unwrap(), rows);
    // Ten minutes later, the old pushes are gone with the next one.
    let spellings = store
        .record_push(
            &["https://git.example/c", "ssh://git.example/c"],
            1_001_000 + KEEP_MS + 1,
        )
        .await
        .unwrap();
    assert_ne!(spellings[0], spellings[1], "each spelling has its own id");
    let left = store.pushes_since(0, 1000).await.unwrap();
    assert_eq!(left.len(), 2, "{left:?}");
    // Long run: more repositories than the table keeps; the newest stay.
    let base = 10_000_000;
    for i in 0..(MAX_ROWS + 1000) {
        store
            .record_push(&[&format!("https://git.example/r{i}")], base + i)
            .await
            .unwrap();
    }
    let kept = store.pushes_since(0, 3 * MAX_ROWS).await.unwrap();
    assert_eq!(kept.len() as i64, MAX_ROWS);
    assert_eq!(kept[0].pushed_ms, base + 1000);
    assert_eq!(
        kept.last().unwrap().repository,
        format!("https://git.example/r{}", MAX_ROWS + 999)
    );
    store.close().await;
    other.close().await;
}

#[tokio::test]
async fn store_suite_on_sqlite() {
    suite(Backend::Sqlite).await;
}

#[tokio::test]
async fn store_suite_on_postgres() {
    let pg = Postgres::start();
    suite(Backend::Postgres(&pg)).await;
}

#[tokio::test]
async fn open_creates_the_sqlite_file_in_the_data_dir() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("nested/data");
    let store = Store::open(&data, None).await.unwrap();
    assert_eq!(store.backend(), wardn::store::Backend::Sqlite);
    assert!(data.join(wardn::store::SQLITE_FILE).exists());
    store.close().await;
    assert!(matches!(
        Store::connect("mysql://x").await,
        Err(StoreError::UnsupportedUrl)
    ));
}

/// A long run on SQLite: appends `WARDN_AUDIT_LONG_RUN` entries (default 10,000), then verifies
/// the chain (paged) and one expected head, printing the rates.
#[tokio::test]
async fn audit_long_run_on_sqlite() {
    let n: i64 = std::env::var("WARDN_AUDIT_LONG_RUN")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000);
    let db = Backend::Sqlite.database("long");
    let store = Store::connect(&db.url).await.unwrap();
    store.init_audit(keys(1, None)).await.unwrap();
    let started = std::time::Instant::now();
    for i in 0..n {
        store
            .append_audit(
                &entry("app.sync", &format!("local/app-{i}")),
                "2026-01-01T00:00:00Z",
            )
            .await
            .unwrap();
    }
    let appended = started.elapsed();
    let head = store.audit_head().unwrap();
    assert_eq!(head.seq, n);
    let started = std::time::Instant::now();
    let verified = store
        .verify_audit(&keys(1, None), Some(&head))
        .await
        .unwrap()
        .unwrap();
    let verify = started.elapsed();
    assert_eq!(verified.entries, n);
    println!(
        "audit long run: {n} appends in {:.2?} ({:.0}/s), verify in {:.2?} ({:.0} entries/s)",
        appended,
        n as f64 / appended.as_secs_f64(),
        verify,
        n as f64 / verify.as_secs_f64()
    );
    store.close().await;
}
