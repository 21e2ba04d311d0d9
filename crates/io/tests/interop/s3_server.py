"""A local S3-compatible server (moto) for kapprox-io's object-storage tests.

Usage: python s3_server.py UPLOAD_DIR BUCKET [--auth]

Starts moto's threaded server on 127.0.0.1 (a free port), creates BUCKET,
uploads every file below UPLOAD_DIR under its relative path, prints one JSON
line {"endpoint", "key_id", "secret"} and serves until its standard input
closes. Never listens on another address.

With --auth, IAM authentication is on: the printed key is a user's allowed
everything, and any other key is refused. (moto's signature check rejects
some valid requests, e.g. listings and keys with "=", so the tests read data
from a server without --auth and check refused credentials against one with it.)
"""

import json
import os
import socket
import sys


def main():
    upload, bucket = sys.argv[1], sys.argv[2]
    auth = "--auth" in sys.argv[3:]
    if auth:
        # Requests allowed before authentication is enforced: the three IAM
        # calls that create the credentials.
        os.environ["INITIAL_NO_AUTH_ACTION_COUNT"] = "3"
    import boto3
    from moto.server import ThreadedMotoServer

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        endpoint = f"http://127.0.0.1:{port}"
        anon = dict(endpoint_url=endpoint, region_name="us-east-1", aws_access_key_id="setup", aws_secret_access_key="setup")
        key = {"AccessKeyId": "testing", "SecretAccessKey": "testing"}
        if auth:
            iam = boto3.client("iam", **anon)
            iam.create_user(UserName="kapprox")
            key = iam.create_access_key(UserName="kapprox")["AccessKey"]
            policy = '{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"*","Resource":"*"}]}'
            iam.put_user_policy(UserName="kapprox", PolicyName="all", PolicyDocument=policy)
        s3 = boto3.client(
            "s3",
            endpoint_url=endpoint,
            region_name="us-east-1",
            aws_access_key_id=key["AccessKeyId"],
            aws_secret_access_key=key["SecretAccessKey"],
        )
        s3.create_bucket(Bucket=bucket)
        for root, _dirs, files in os.walk(upload):
            for f in files:
                path = os.path.join(root, f)
                rel = os.path.relpath(path, upload).replace(os.sep, "/")
                s3.upload_file(path, bucket, rel)
        print(json.dumps({"endpoint": endpoint, "key_id": key["AccessKeyId"], "secret": key["SecretAccessKey"]}), flush=True)
        sys.stdin.read()
    finally:
        server.stop()


if __name__ == "__main__":
    main()
