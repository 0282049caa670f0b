#!/usr/bin/env python3
"""Signs in to a web app that sends its visitors to the broker's sign-in
page (a relying party in front of the app, such as Apache's
mod_auth_openidc), as a person with a browser would: opens START_URL,
follows the redirects to the broker's page, types USER, prints
"number: N" for the device to match, waits as the page's script does, and
follows the redirects back to the app. Prints one JSON object: the final
status, URL, page text (its first 2,000 characters, style sheets left out) and the URLs
redirected through on the way. Exits 0 whatever
the app answered; 1 if the flow broke before that.

    sign-in-through.py START_URL USER [--extra-get URL]

--extra-get fetches URL afterwards with the same cookies (a protected page
again, or the app's logout link) and adds its status, URL and text as
"then".
"""
import sys

if any(argument in ("-h", "--help") for argument in sys.argv[1:]):
    print(__doc__.strip())
    sys.exit(0)
if len(sys.argv) < 3:
    print(__doc__.strip(), file=sys.stderr)
    sys.exit(2)
import argparse
import html
import json
import re
import urllib.parse

import requests

parser = argparse.ArgumentParser()
parser.add_argument("start")
parser.add_argument("user")
parser.add_argument("--extra-get", action="append", default=[])
arguments = parser.parse_args()
result = {}


def fail(message):
    result["failed"] = message
    print(json.dumps(result, sort_keys=True), flush=True)
    sys.exit(1)


def without_style(text):
    return re.sub(r"<style>.*?</style>", "", text, flags=re.S)


def page(response):
    return {"status": response.status_code, "url": response.url, "text": without_style(response.text)[:2000],
            "history": [step.url for step in response.history]}


browser = requests.Session()
form_page = browser.get(arguments.start, timeout=30)
if form_page.status_code != 200 or 'name="user"' not in form_page.text:
    fail(f"the app did not lead to the broker's sign-in page: {form_page.status_code} {form_page.url}")
broker = "{0.scheme}://{0.netloc}".format(urllib.parse.urlsplit(form_page.url))
result["authorize_url"] = form_page.url
fields = {name: html.unescape(value) for name, value in
          re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', form_page.text)}
# A browser posts the page's own form with its origin (the page's referrer
# policy keeps it) and Sec-Fetch-Site: same-origin.
started = browser.post(broker + "/oauth/sign-in", data=dict(fields, user=arguments.user),
                       headers={"Origin": broker, "Sec-Fetch-Site": "same-origin"}, timeout=30)
number = re.search(r'<p class="number" id="number">(\d+)</p>', started.text)
if started.status_code != 200 or number is None:
    fail(f"the user name did not start the sign-in: {started.status_code} {started.text[:300]}")
print(f"number: {number.group(1)}", flush=True)
waiting = urllib.parse.parse_qs(urllib.parse.urlsplit(started.url).query).get("id", [None])[0]
status = "pending"
while status == "pending":
    polled = browser.get(broker + "/oauth/sign-in/status", params={"wait": "25", "id": waiting}, timeout=60)
    if polled.status_code != 200:
        fail(f"the status poll failed: {polled.status_code}")
    status = polled.json()["status"]
result["status"] = status
ended = browser.get(broker + "/oauth/sign-in", params={"id": waiting}, timeout=30)
if ended.url.startswith(broker):
    # A refusal's page leads back to the app by a refresh, as a browser follows it.
    refresh = re.search(r'<meta http-equiv="refresh" content="\d+;url=([^"]+)">', ended.text)
    if refresh is None:
        fail(f"the ended sign-in leads nowhere: {ended.status_code} {ended.text[:300]}")
    result["broker_page"] = " ".join(re.sub(r"<[^>]+>", " ", without_style(ended.text)).split())[:600]
    ended = browser.get(html.unescape(refresh.group(1)), timeout=30)
result["app"] = page(ended)
for url in arguments.extra_get:
    result.setdefault("then", []).append(page(browser.get(url, timeout=30)))
print(json.dumps(result, sort_keys=True), flush=True)
