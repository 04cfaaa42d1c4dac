# A Visito receiver written from seed 001 ("Visito M2M API: Webhooks")
# alone; the seed prints no code, so this follows its sentences:
# - "Encabezados: X-Visito-Event-Id y X-Visito-Signature:
#   t=<segundos-unix>,v1=<hmac-hex>."
# - "Calcula HMAC-SHA256 de timestamp + "." + cuerpoOriginal usando el
#   secreto. Compara en tiempo constante, rechaza diferencias de más de
#   cinco minutos y deduplica por eventId. Verifica los bytes originales
#   antes de interpretar JSON."
# - "El evento contiene eventId, type, schemaVersion:"1.0", tenantId,
#   occurredAt y data."
# - "Devuelve 2xx después de aceptar durablemente el evento."
# - "La rotación del secreto aplica inmediatamente a futuros intentos":
#   after a rotation the receiver holds the new secret only.
#
# Test controls (not part of the seed): POST /_secreto {"secreto": "..."}
# sets the one secret it knows; POST /_roto {"roto": true|false}: while
# broken, an event whose data has "fallar": true is answered 503 before
# it is accepted; GET /_registro answers what it accepted, what it
# dropped as duplicate, every request's eventId, and what it refused.
# For `motor check-receiver --profile visito` (crates/motor/tests/
# check_receiver): the env SECRETO is its first secret; GET
# /efectos/<eventId> answers {"efectos": N}, how many times it applied
# that event; the env DEFECTO=sin_ventana makes it skip the five-minute
# check (a deliberate bug the checker must catch).
# Prints its port on its first line.
import hashlib
import hmac
import json
import os
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

CAMPOS = ["eventId", "type", "schemaVersion", "tenantId", "occurredAt", "data"]
CINCO_MINUTOS = 300

lock = threading.Lock()
estado = {"secreto": os.environ.get("SECRETO", ""), "roto": False}
DEFECTO = os.environ.get("DEFECTO", "")
vistos: set[str] = set()
aceptadas: list[dict] = []
duplicadas: list[str] = []
solicitudes: list[str] = []
rechazadas: list[str] = []


def firma_valida(cabecera: str | None, cuerpo: bytes, secreto: str) -> bool:
    if not cabecera:
        return False
    partes = dict(p.strip().split("=", 1) for p in cabecera.split(",") if "=" in p)
    t, v1 = partes.get("t"), partes.get("v1")
    if not t or not v1 or not t.isdigit():
        return False
    if DEFECTO != "sin_ventana" and abs(int(time.time()) - int(t)) > CINCO_MINUTOS:
        return False
    esperada = hmac.new(secreto.encode(), t.encode() + b"." + cuerpo, hashlib.sha256).hexdigest()
    return hmac.compare_digest(v1, esperada)


class Receptor(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def responder(self, status: int, cuerpo: bytes = b"") -> None:
        self.send_response(status)
        self.send_header("content-length", str(len(cuerpo)))
        self.end_headers()
        self.wfile.write(cuerpo)

    def rechazar(self, por: str) -> None:
        with lock:
            rechazadas.append(por)
        self.responder(400)

    def do_GET(self):
        if self.path.startswith("/efectos/"):
            event_id = self.path.rsplit("/", 1)[-1]
            with lock:
                n = sum(1 for e in aceptadas if e["eventId"] == event_id)
            return self.responder(200, json.dumps({"efectos": n}).encode())
        if self.path != "/_registro":
            return self.responder(404)
        with lock:
            registro = {
                "aceptadas": aceptadas,
                "duplicadas": duplicadas,
                "solicitudes": solicitudes,
                "rechazadas": rechazadas,
            }
            self.responder(200, json.dumps(registro).encode())

    def do_POST(self):
        cuerpo = self.rfile.read(int(self.headers.get("content-length", "0")))
        if self.path == "/_secreto":
            with lock:
                estado["secreto"] = json.loads(cuerpo)["secreto"]
            return self.responder(204)
        if self.path == "/_roto":
            with lock:
                estado["roto"] = json.loads(cuerpo)["roto"]
            return self.responder(204)
        with lock:
            secreto, roto = estado["secreto"], estado["roto"]
        if not firma_valida(self.headers.get("X-Visito-Signature"), cuerpo, secreto):
            return self.rechazar("firma")
        evento = json.loads(cuerpo)
        if list(evento.keys()) != CAMPOS or evento["schemaVersion"] != "1.0":
            return self.rechazar("campos:" + ",".join(evento.keys()))
        if self.headers.get("X-Visito-Event-Id") != evento["eventId"]:
            return self.rechazar("X-Visito-Event-Id")
        with lock:
            solicitudes.append(evento["eventId"])
        if roto and evento["data"].get("fallar"):
            return self.responder(503)
        with lock:
            if evento["eventId"] in vistos:
                duplicadas.append(evento["eventId"])
            else:
                vistos.add(evento["eventId"])
                aceptadas.append(evento)
        self.responder(204)


servidor = ThreadingHTTPServer(("127.0.0.1", 0), Receptor)
print(servidor.server_address[1], flush=True)
servidor.serve_forever()
