// The one account this browser holds, in IndexedDB: the app's key id, the
// user, the device's name and id, and its key pair as CryptoKey objects
// (stored by structured clone; the private key stays non-extractable).

const DATABASE = "countersign-approver";
const STORE = "accounts";

function open() {
  return new Promise((resolve, reject) => {
    const request = indexedDB.open(DATABASE, 1);
    request.onupgradeneeded = () => request.result.createObjectStore(STORE, { keyPath: "deviceID" });
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(request.error);
  });
}

async function run(mode, body) {
  const database = await open();
  try {
    return await new Promise((resolve, reject) => {
      const transaction = database.transaction(STORE, mode);
      const request = body(transaction.objectStore(STORE));
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
