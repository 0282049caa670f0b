// The one account this browser holds, in IndexedDB: the app's key id, the
// user, the device's name and id, and its key pair as CryptoKey objects
// (stored by structured clone; the private key stays non-extractable).
// Beside it, a pairing still waiting for a trusted device: its key pair and
// ticket, so that a reload or a second tab waits for the same request
// instead of losing the key the trusted device is about to approve.

const DATABASE = "countersign-approver";
const STORE = "accounts";
const PAIRING = "pairing";

function open() {
  return new Promise((resolve, reject) => {
    const request = indexedDB.open(DATABASE, 2);
    request.onupgradeneeded = () => {
      const names = request.result.objectStoreNames;
      if (!names.contains(STORE)) request.result.createObjectStore(STORE, { keyPath: "deviceID" });
      if (!names.contains(PAIRING)) request.result.createObjectStore(PAIRING);
    };
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(request.error);
  });
}

async function run(mode, body, storeName = STORE) {
  const database = await open();
  try {
    return await new Promise((resolve, reject) => {
      const transaction = database.transaction(storeName, mode);
      const request = body(transaction.objectStore(storeName));
      transaction.oncomplete = () => resolve(request.result);
      transaction.onerror = () => reject(transaction.error);
      transaction.onabort = () => reject(transaction.error);
    });
  } finally {
    database.close();
  }
}

export async function loadAccount() {
  const accounts = await run("readonly", (store) => store.getAll());
  return accounts[0] ?? null;
}

export function saveAccount(account) {
  return run("readwrite", (store) => store.put(account));
}

export function forgetAccount(deviceID) {
  return run("readwrite", (store) => store.delete(deviceID));
}

/** The pairing this browser asked for and still waits on, or null. */
export async function loadPairing() {
  return (await run("readonly", (store) => store.get("current"), PAIRING)) ?? null;
}

export function savePairing(pairing) {
  return run("readwrite", (store) => store.put(pairing, "current"), PAIRING);
}

export function forgetPairing() {
  return run("readwrite", (store) => store.delete("current"), PAIRING);
}
