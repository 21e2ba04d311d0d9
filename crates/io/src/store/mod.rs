//! Where shards live: local files (memory-mapped) or object storage (ranged
//! reads through the `object_store` crate), behind one synchronous API.
//!
//! # Addresses
//!
//! A dataset path is a local path, or a URL:
//!
//! | Scheme | Store | Credentials and settings |
//! |---|---|---|
//! | `s3://bucket/prefix` (also `s3a://`) | S3 and compatible stores | `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`, `AWS_REGION`, `AWS_ENDPOINT_URL` (or `AWS_ENDPOINT`), `AWS_ALLOW_HTTP`, ... |
//! | `gs://bucket/prefix` | Google Cloud Storage | `GOOGLE_SERVICE_ACCOUNT`, `GOOGLE_APPLICATION_CREDENTIALS`, ... |
//! | `az://container/prefix` (also `abfs://`, `abfss://`) | Azure Blob Storage | `AZURE_STORAGE_ACCOUNT_NAME`, `AZURE_STORAGE_ACCOUNT_KEY`, ... |
//! | `http://`, `https://` | a server that lists (WebDAV) and serves ranges | none |
//! | `file:///abs/path` | the local file system | none |
//!
//! Settings come from the environment variables each store's builder reads
//! (`from_env`); the S3 path is the one tested here (against a local
//! S3-compatible server), the other clouds come with the same crate at no
//! extra cost and are untested.
//!
//! # What is read
//!
//! Listing follows the same rules as a local directory (see
//! [`dataset`](crate::dataset)). Opening a shard reads its footer with one
//! ranged request for the last 64 KiB (a second one only for a larger
//! footer). Decoding a row group fetches exactly the byte ranges of the
//! requested column chunks of that row group (adjacent ranges are merged
//! into one request), so a shard is never downloaded whole: resident memory
//! per decode thread is one row group's requested column chunks, the same
//! term as the local reader's mapped pages.
//!
//! The object-store client is asynchronous; a small runtime of two threads,
//! created on first use, runs it, and every call here blocks on it.

mod remote;

pub(crate) use remote::{RemoteFile, RowGroupBytes};

use crate::error::{IoError, Result};
use object_store::ObjectStore;
use object_store::path::Path as ObjectPath;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use tokio::runtime::Runtime;

/// An object store and the URL prefix its paths are relative to.
#[derive(Debug)]
pub(crate) struct Store {
    pub(crate) store: Arc<dyn ObjectStore>,
    /// `scheme://authority`, e.g. `s3://bucket`, without a trailing slash.
    pub(crate) base: String,
}

impl Store {
    /// The URL of an object, for messages and [`ShardInfo::path`](crate::ShardInfo::path).
    pub(crate) fn url(&self, path: &ObjectPath) -> PathBuf {
        PathBuf::from(format!("{}/{}", self.base, path))
    }
}

/// Where a dataset path points.
pub(crate) enum Root {
    /// A local file or directory.
    Local(PathBuf),
    /// An object or prefix in a store.
    Remote(Arc<Store>, ObjectPath),
}

/// Whether `path` is written as a URL (`scheme://...`).
pub(crate) fn is_url(path: &Path) -> bool {
    let Some(s) = path.to_str() else { return false };
    match s.find("://") {
        Some(i) if i > 0 => s[..i].chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')),
        _ => false,
    }
}

/// Interprets a dataset path: local, `file://`, or an object store URL.
///
/// # Errors
/// A malformed URL, an unsupported scheme, or a store that cannot be
/// configured from the environment.
pub(crate) fn resolve(path: &Path) -> Result<Root> {
    if !is_url(path) {
        return Ok(Root::Local(path.to_path_buf()));
    }
    let text = path.to_str().expect("URLs are UTF-8");
    let bad_url = |expected: &'static str| IoError::InvalidOption { option: "URL", value: text.to_string(), expected };
    let url = url::Url::parse(text).map_err(|_| bad_url("a URL such as s3://bucket/prefix"))?;
    if url.scheme() == "file" {
        return url.to_file_path().map(Root::Local).map_err(|_| bad_url("an absolute file:///path"));
    }
    let (scheme, prefix) = object_store::ObjectStoreScheme::parse(&url)
        .map_err(|_| bad_url("a URL of a supported store: s3://, gs://, az://, abfs(s)://, http(s)://, file://"))?;
    let configure = |error: object_store::Error| IoError::Store {
        path: path.to_path_buf(),
        what: "cannot configure the store",
        error,
    };
    use object_store::ObjectStoreScheme as S;
    let store: Arc<dyn ObjectStore> = match scheme {
        S::AmazonS3 => {
            Arc::new(object_store::aws::AmazonS3Builder::from_env().with_url(text).build().map_err(configure)?)
        }
        S::GoogleCloudStorage => Arc::new(
            object_store::gcp::GoogleCloudStorageBuilder::from_env().with_url(text).build().map_err(configure)?,
        ),
        S::MicrosoftAzure => {
            Arc::new(object_store::azure::MicrosoftAzureBuilder::from_env().with_url(text).build().map_err(configure)?)
        }
        S::Http => {
            let origin = &url[..url::Position::BeforePath];
            Arc::new(object_store::http::HttpBuilder::new().with_url(origin).build().map_err(configure)?)
        }
        _ => return Err(bad_url("a URL of a supported store: s3://, gs://, az://, abfs(s)://, http(s)://, file://")),
    };
    let base = match scheme {
        S::Http => url[..url::Position::BeforePath].to_string(),
        _ => format!("{}://{}", url.scheme(), url.host_str().unwrap_or_default()),
    };
    Ok(Root::Remote(Arc::new(Store { store, base }), prefix))
}

/// Runs a future of the object-store client to completion.
pub(crate) fn block_on<F: std::future::Future>(path: &Path, f: F) -> Result<F::Output> {
    static RUNTIME: OnceLock<std::result::Result<Runtime, String>> = OnceLock::new();
    let rt = RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("kapprox-io-store")
            .enable_all()
            .build()
            .map_err(|e| e.to_string())
    });
    match rt {
        Ok(rt) => Ok(rt.block_on(f)),
        Err(e) => Err(IoError::os(path, "cannot start the object-store runtime", std::io::Error::other(e.clone()))),
    }
}

/// An object found by listing: its path and size.
pub(crate) struct Object {
    pub(crate) path: ObjectPath,
    pub(crate) size: u64,
}

/// Every object under `prefix` (recursively), or the object at `prefix`
/// itself when nothing is below it.
pub(crate) fn list(store: &Store, prefix: &ObjectPath) -> Result<Vec<Object>> {
    use futures::TryStreamExt;
    let url = store.url(prefix);
    let listed: Vec<object_store::ObjectMeta> = block_on(&url, store.store.list(Some(prefix)).try_collect())?
        .map_err(|error| IoError::Store { path: url.clone(), what: "cannot list", error })?;
    if !listed.is_empty() {
        return Ok(listed.into_iter().map(|m| Object { path: m.location, size: m.size }).collect());
    }
    use object_store::ObjectStoreExt;
    match block_on(&url, store.store.head(prefix))? {
        Ok(m) => Ok(vec![Object { path: m.location, size: m.size }]),
        Err(object_store::Error::NotFound { .. }) => Err(IoError::NotFound { path: url }),
        Err(error) => Err(IoError::Store { path: url, what: "cannot read", error }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_told_from_paths() {
        assert!(is_url(Path::new("s3://bucket/prefix")));
        assert!(is_url(Path::new("file:///tmp/x")));
        assert!(!is_url(Path::new("data/train")));
        assert!(!is_url(Path::new("/tmp/a://b")));
        assert!(!is_url(Path::new("://x")));
    }

    #[test]
    fn file_urls_are_local_and_unknown_schemes_are_refused() {
        match resolve(Path::new("file:///tmp/some/dir")).unwrap() {
            Root::Local(p) => assert_eq!(p, Path::new("/tmp/some/dir")),
            Root::Remote(..) => panic!("file:// is local"),
        }
        let e = resolve(Path::new("ftp://host/x")).err().unwrap().to_string();
        assert!(e.contains("ftp://host/x") && e.contains("s3://"), "{e}");
    }
}
