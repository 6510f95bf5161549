"""Commands a team runs against its deployed app (on AWS, or the local emulator with AWS_ENDPOINT_URL set)."""
