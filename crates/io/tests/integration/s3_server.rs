//! A local S3-compatible server (moto, via `tests/interop/s3_server.py`)
//! for the object-storage tests.

use crate::python::{python_with, script};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

/// A moto server holding a bucket with the files of a directory; with
/// `auth`, one that checks credentials (moto's signature check also
/// rejects some valid requests, so data is read from a server without it).
pub(crate) struct S3 {
    /// The key id the server accepts.
    pub(crate) key_id: String,
    /// Its secret.
    pub(crate) secret: String,
    child: Child,
    endpoint: String,
}

impl S3 {
    /// Starts a server (`None`, with the reason printed, without moto).
    pub(crate) fn start(upload: &Path, bucket: &str, auth: bool) -> Option<S3> {
        let python = python_with(&["moto", "boto3", "flask", "flask_cors"], &["moto[server]", "boto3"])?;
        let mut child = Command::new(python)
            .arg(script("s3_server.py"))
            .arg(upload)
            .arg(bucket)
            .args(auth.then_some("--auth"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("python runs");
        let mut line = String::new();
        BufReader::new(child.stdout.as_mut().expect("piped")).read_line(&mut line).expect("read the server's line");
        // With moto installed, a server that does not come up is a failure.
        let Ok(v) = serde_json::from_str::<serde_json::Value>(&line) else {
            let _ = child.kill();
            let out = child.wait_with_output().expect("server exits");
            panic!("the S3 server did not start: {}", String::from_utf8_lossy(&out.stderr));
        };
        let field = |k: &str| v[k].as_str().unwrap_or_default().to_string();
        Some(S3 { endpoint: field("endpoint"), key_id: field("key_id"), secret: field("secret"), child })
    }

    /// The environment that points an S3 client at the server with the
    /// given credentials.
    pub(crate) fn env(&self, key_id: &str, secret: &str) -> [(&'static str, String); 5] {
        [
            ("AWS_ENDPOINT_URL", self.endpoint.clone()),
            ("AWS_ALLOW_HTTP", "true".into()),
            ("AWS_REGION", "us-east-1".into()),
            ("AWS_ACCESS_KEY_ID", key_id.into()),
            ("AWS_SECRET_ACCESS_KEY", secret.into()),
        ]
    }

    /// Points this process's S3 client at the server with the given credentials.
    pub(crate) fn set_env(&self, key_id: &str, secret: &str) {
        for (k, v) in self.env(key_id, secret) {
            // SAFETY: only this test (one thread) reads or writes these variables.
            unsafe { std::env::set_var(k, v) };
        }
    }
}

impl Drop for S3 {
    fn drop(&mut self) {
        // Closing stdin stops the server; kill only if it does not exit.
        drop(self.child.stdin.take());
        for _ in 0..50 {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
