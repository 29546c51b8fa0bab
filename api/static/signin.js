// throwbox sign-in, shared by the dashboard and the table console: the key is kept in sessionStorage (a tab's
// own, gone when it closes), may come once in the address (#key=..., as `throwbox serve --demo` prints it)
// and is taken out of the address at once; the sign-in form (#login, #key, #login-error) stores what is
// typed. Each page keeps its own start and sign-out, which differ in what they open and close.
"use strict";

const KEY_ITEM = "throwbox.key";

function takeKeyFromHash() {
  const match = /(?:^#|&)key=([^&]+)/.exec(window.location.hash);
  if (match) {
    sessionStorage.setItem(KEY_ITEM, decodeURIComponent(match[1]));
    history.replaceState(null, "", window.location.pathname + window.location.search);
  }
}

function storedKey() {
  return sessionStorage.getItem(KEY_ITEM);
}

function forgetKey() {
  sessionStorage.removeItem(KEY_ITEM);
}

// The sign-in form: an empty key is refused in words; a typed one is stored and `start` called.
function bindSignIn(start) {
  document.getElementById("login").addEventListener("submit", (e) => {
    e.preventDefault();
    const field = document.getElementById("key");
    const typed = field.value.trim();
    if (!typed) { document.getElementById("login-error").textContent = "enter a key"; return; }
    sessionStorage.setItem(KEY_ITEM, typed);
    field.value = "";
    start();
  });
}
