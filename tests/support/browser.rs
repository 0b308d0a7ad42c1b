//! A headless Chromium (Debian's `chromium` and `chromium-driver` packages) driven through
//! chromedriver with fantoccini, for the web UI's browser tests; screenshots go to
//! `target/ui-screenshots/`. chromedriver is started on a free port in its own process group,
//! which is killed (by its id: chromedriver and the Chromium it started) when the [`Browser`]
//! is dropped. Not declared in `support/mod.rs`: only the browser tests link fantoccini
//! (`#[path = "support/browser.rs"] mod browser;`).

use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{Value, json};

/// Where chromedriver is installed (`chromium-driver`).
pub const CHROMEDRIVER: &str = "/usr/bin/chromedriver";
/// Where Chromium is installed (`chromium`).
pub const CHROMIUM: &str = "/usr/bin/chromium";

/// A running chromedriver and one browser session in it.
pub struct Browser {
    /// The WebDriver session.
    pub client: Client,
    driver: Child,
    _profile: tempfile::TempDir,
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

impl Browser {
    /// Starts chromedriver and a headless Chromium window of `width` x `height` CSS pixels.
    pub async fn start(width: u32, height: u32) -> Browser {
        for binary in [CHROMEDRIVER, CHROMIUM] {
            assert!(
                std::path::Path::new(binary).exists(),
                "{binary} is missing: apt-get install -y chromium chromium-driver (.ci/run installs them)"
            );
        }
        let port = free_port();
        let driver = Command::new(CHROMEDRIVER)
            .arg(format!("--port={port}"))
            .arg("--allowed-ips=127.0.0.1")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .unwrap();
        let url = format!("http://127.0.0.1:{port}");
        let profile = tempfile::tempdir().unwrap();
        let mut capabilities = serde_json::Map::new();
        capabilities.insert(
            "goog:chromeOptions".into(),
            json!({
                "binary": CHROMIUM,
                "args": [
                    "--headless=new",
                    "--no-sandbox",
                    "--disable-gpu",
                    "--disable-dev-shm-usage",
                    "--no-first-run",
                    "--disable-extensions",
                    "--hide-scrollbars",
                    "--force-device-scale-factor=1",
                    format!("--window-size={width},{height}"),
                    format!("--user-data-dir={}", profile.path().display()),
                ],
            }),
        );
        let mut builder = ClientBuilder::rustls().unwrap();
        builder.capabilities(capabilities);
        let mut last = None;
        for _ in 0..100 {
            match builder.connect(&url).await {
                Ok(client) => {
                    client.set_window_size(width, height).await.unwrap();
                    return Browser {
                        client,
                        driver,
                        _profile: profile,
                    };
                }
                Err(err) => last = Some(err),
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("chromedriver did not start a session: {last:?}");
    }

    /// Opens `url`.
    pub async fn goto(&self, url: &str) {
        self.client.goto(url).await.unwrap();
    }

    /// The path (and query) of the page shown.
    pub async fn path(&self) -> String {
        let url = self.client.current_url().await.unwrap();
        match url.query() {
            Some(query) => format!("{}?{query}", url.path()),
            None => url.path().to_string(),
        }
    }

    /// The element at `css`, once it exists (a minute at most).
    pub async fn find(&self, css: &str) -> fantoccini::elements::Element {
        self.client
            .wait()
            .at_most(Duration::from_secs(60))
            .for_element(Locator::Css(css))
            .await
            .unwrap_or_else(|err| panic!("no element {css}: {err}"))
    }

    /// Waits until the text of the element at `css` contains `needle` (a minute at most) and
    /// returns that text.
    pub async fn wait_text(&self, css: &str, needle: &str) -> String {
        let mut seen = String::new();
        for _ in 0..600 {
            if let Ok(element) = self.client.find(Locator::Css(css)).await
                && let Ok(text) = element.text().await
            {
                if text.contains(needle) {
                    return text;
                }
                seen = text;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("{css} never showed {needle:?}; last text: {seen:?}");
    }

    /// Waits until the text of the element at `css` is exactly `text` (trimmed; a minute at
    /// most).
    pub async fn wait_exact(&self, css: &str, text: &str) {
        let mut seen = String::new();
        for _ in 0..600 {
            if let Ok(element) = self.client.find(Locator::Css(css)).await
                && let Ok(shown) = element.text().await
            {
                if shown.trim() == text {
                    return;
                }
                seen = shown;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("{css} never showed exactly {text:?}; last text: {seen:?}");
    }

    /// Types `text` into the field at `css` after clearing it.
    pub async fn type_into(&self, css: &str, text: &str) {
        let field = self.find(css).await;
        field.clear().await.unwrap();
        field.send_keys(text).await.unwrap();
    }

    /// Sets the value of the field at `css` as a paste would (long texts, newlines).
    pub async fn paste(&self, css: &str, text: &str) {
        self.find(css).await;
        self.script(
            "const el = document.querySelector(arguments[0]); el.value = arguments[1]; \
             el.dispatchEvent(new Event('input', {bubbles: true}));",
            vec![json!(css), json!(text)],
        )
        .await;
    }

    /// Clicks the element at `css`. Pages re-render as they poll, so an element found just
    /// before a re-render is stale by the click: found again and clicked (a minute at most).
    pub async fn click(&self, css: &str) {
        for _ in 0..600 {
            match self.find(css).await.click().await {
                Ok(()) => return,
                Err(fantoccini::error::CmdError::Standard(err))
                    if err.error == fantoccini::error::ErrorStatus::StaleElementReference =>
                {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                Err(err) => panic!("clicking {css}: {err}"),
            }
        }
        panic!("{css} went stale at every click for a minute");
    }

    /// Runs `script` in the page with `args`; returns its value.
    pub async fn script(&self, script: &str, args: Vec<Value>) -> Value {
        self.client.execute(script, args).await.unwrap()
    }

    /// Saves a PNG of the whole page as `target/ui-screenshots/NAME.png` (the window grows to
    /// the page's height for the shot, then returns to `width` x `height`). Returns its path.
    pub async fn screenshot(&self, name: &str, width: u32, height: u32) -> PathBuf {
        // The window's outer size is set: the page's height plus the window's own chrome.
        let full = self
            .script(
                "window.scrollTo(0, 0); return Math.ceil(Math.max(document.documentElement.scrollHeight, \
                 document.body.scrollHeight) + (window.outerHeight - window.innerHeight));",
                vec![],
            )
            .await
            .as_u64()
            .and_then(|h| u32::try_from(h).ok())
            .unwrap_or(height)
            .clamp(height, 8000);
        self.client.set_window_size(width, full).await.unwrap();
        // Two frames for the layout of the taller window.
        self.script(
            "return new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)));",
            vec![],
        )
        .await;
        let png = self.client.screenshot().await.unwrap();
        self.client.set_window_size(width, height).await.unwrap();
        assert!(png.starts_with(b"\x89PNG"), "{name}: not a PNG");
        let dir = screenshot_dir();
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(format!("{name}.png"));
        std::fs::write(&path, png).unwrap();
        path
    }

    /// Ends the session (Chromium quits) and stops chromedriver.
    pub async fn close(self) {
        let _ = self.client.clone().close().await;
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        // The process group chromedriver leads: chromedriver and its Chromium, by id.
        if let Ok(pid) = i32::try_from(self.driver.id()) {
            // SAFETY: kill(2) with a negative pid signals that process group only.
            unsafe {
                libc::kill(-pid, libc::SIGKILL);
            }
        }
        let _ = self.driver.wait();
    }
}

/// `target/ui-screenshots` of this workspace (or of `CARGO_TARGET_DIR`).
pub fn screenshot_dir() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target"));
    target.join("ui-screenshots")
}
