# An Asixto receiver written from seed 003 ("Asixto: Webhooks") alone, as
# an integrator would: an HTTP server on loopback whose verifier is the
# seed's Python `verificar` ("2 · Verificar la firma"), copied as written;
# the header rule ("La cabecera viaja una sola vez con varias firmas
# dentro, nunca repetida ... rechace la entrega"); dedup by `id` ("4 ·
# Deduplicación: id"); and a replay correlated by `replay_of` ("6 ·
# Reproducción manual: Deduplique por id; correlacione por replay_of").
#
# Test controls (not part of the seed): POST /_secretos {"secretos": [...]}
# sets the secrets it knows (one, or two while rotating); GET /_registro
# answers what it accepted, what it dropped as duplicate and what it
# refused. For `motor check-receiver --profile asixto` (crates/motor/
# tests/check_receiver): the env SECRETOS (a JSON list) are its first
# secrets; GET /efectos/<id> answers {"efectos": N}, how many times it
# applied the delivery with that id; the env DEFECTO names one deliberate
# bug the checker must catch: `sin_replay_of` refuses an envelope with
# `replay_of` (a field list frozen before section 6), `primera_firma`
# compares only the first v1= (what section 2's rule 4 warns about).
# Prints its port on its first line.
import json
import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# --- from the seed, unchanged ------------------------------------------------

import hashlib
import hmac
import time

TOLERANCIA_S = 300


def verificar(cabecera: str | None, cuerpo: bytes, secretos: list[str]) -> bool:
    """`cuerpo` es el cuerpo CRUDO. `secretos` son los que su receptor conoce (uno, o dos al rotar)."""
    if not cabecera:
        return False

    instante: str | None = None
    firmas: list[str] = []
    for parte in cabecera.split(","):
        clave, _, valor = parte.strip().partition("=")
        if clave == "t":
            instante = valor
        elif clave == "v1":
            firmas.append(valor)

    if instante is None or not instante.isdigit() or not firmas:
        return False

    # Ventana SIMÉTRICA: un instante en el futuro también se rechaza.
    if abs(int(time.time()) - int(instante)) > TOLERANCIA_S:
        return False

    mensaje = instante.encode() + b"." + cuerpo
    for secreto in secretos:
        esperada = hmac.new(secreto.encode(), mensaje, hashlib.sha256).hexdigest()
        if any(hmac.compare_digest(firma, esperada) for firma in firmas):
            return True
    return False

# --- the receiver ------------------------------------------------------------

# "1 · Lo que llega": the envelope's fields; "No añada suposiciones sobre
# campos que no están en esta tabla". replay_of comes with a replay (6).
CAMPOS = ["id", "type", "created", "environment", "data"]

DEFECTO = os.environ.get("DEFECTO", "")
lock = threading.Lock()
secretos: list[str] = json.loads(os.environ.get("SECRETOS", "[]"))
vistos: set[str] = set()  # ids already taken ("durante 7 días")
aceptadas: list[dict] = []
duplicadas: list[str] = []
rechazadas: list[str] = []


class Receptor(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def responder(self, status: int, cuerpo: bytes = b"") -> None:
        self.send_response(status)
        self.send_header("content-length", str(len(cuerpo)))
        self.end_headers()
        self.wfile.write(cuerpo)

    def do_GET(self):
        if self.path.startswith("/efectos/"):
            id_ = self.path.rsplit("/", 1)[-1]
            with lock:
                n = sum(1 for s in aceptadas if s["id"] == id_)
            return self.responder(200, json.dumps({"efectos": n}).encode())
        if self.path != "/_registro":
            return self.responder(404)
        with lock:
            registro = {
                "aceptadas": aceptadas,
                "duplicadas": duplicadas,
                "rechazadas": rechazadas,
            }
            self.responder(200, json.dumps(registro).encode())

    def do_POST(self):
        cuerpo = self.rfile.read(int(self.headers.get("content-length", "0")))
        if self.path == "/_secretos":
            with lock:
                secretos[:] = json.loads(cuerpo)["secretos"]
            return self.responder(204)
        cabeceras = self.headers.get_all("Asixto-Signature") or []
        with lock:
            conocidos = list(secretos)
        if len(cabeceras) > 1:
            with lock:
                rechazadas.append("cabecera_repetida")
            return self.responder(400)
        cabecera = cabeceras[0] if cabeceras else None
        if cabecera and DEFECTO == "primera_firma":
            # The bug section 2's rule 4 warns of: only the first v1= counts.
            partes = cabecera.split(",")
            primera = next((i for i, p in enumerate(partes) if p.strip().startswith("v1=")), None)
            if primera is not None:
                cabecera = ",".join(p for i, p in enumerate(partes) if i <= primera or not p.strip().startswith("v1="))
        # Verify the raw bytes before anything reads them as JSON.
        if not verificar(cabecera, cuerpo, conocidos):
            with lock:
                rechazadas.append("firma")
            return self.responder(400)
        sobre = json.loads(cuerpo)
        con_replay = "replay_of" in sobre and DEFECTO != "sin_replay_of"
        esperados = CAMPOS[:4] + (["replay_of"] if con_replay else []) + CAMPOS[4:]
        if list(sobre.keys()) != esperados:
            with lock:
                rechazadas.append("campos:" + ",".join(sobre.keys()))
            return self.responder(400)
        with lock:
            if sobre["id"] in vistos:
                duplicadas.append(sobre["id"])
            else:
                vistos.add(sobre["id"])
                aceptadas.append(sobre)
        # "El único acuse es un 2xx": answered once the delivery is safe.
        self.responder(200)


servidor = ThreadingHTTPServer(("127.0.0.1", 0), Receptor)
print(servidor.server_address[1], flush=True)
servidor.serve_forever()
