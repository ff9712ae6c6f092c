import base64, hashlib, hmac, json, struct
from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305
P=2**256-2**32-977; N=0xFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141
G=(0x79BE667EF9DCBBAC55A06295CE870B07029BFCDB2DCE28D959F2815B16F81798,0x483ADA7726A3C4655DA4FBFC0E1108A8FD17B448A68554199C47D08FFB10D4B8)
def add(a,b):
    if a is None: return b
    if b is None: return a
    if a[0]==b[0] and (a[1]+b[1])%P==0: return None
    if a==b: l=3*a[0]*a[0]*pow(2*a[1],-1,P)%P
    else: l=(b[1]-a[1])*pow(b[0]-a[0],-1,P)%P
    x=(l*l-a[0]-b[0])%P; return (x,(l*(a[0]-x)-a[1])%P)
def mul(k,pt):
    r=None
    while k:
        if k&1: r=add(r,pt)
        pt=add(pt,pt); k>>=1
    return r
def lift(xhex,odd):
    x=int(xhex,16); y2=(x**3+7)%P; y=pow(y2,(P+1)//4,P)
    if (y&1)!=odd: y=P-y
    return (x,y)
def comp(pt): return bytes([2+(pt[1]&1)])+pt[0].to_bytes(32,'big')
def hkdf(ikm):
    prk=hmac.new(b'',ikm,hashlib.sha256).digest()
    return hmac.new(prk,b'nip44-v2\x01',hashlib.sha256).digest()
def rotl(v,c): return ((v<<c)&0xffffffff)|(v>>(32-c))
def qr(s,a,b,c,d):
    s[a]=(s[a]+s[b])&0xffffffff; s[d]=rotl(s[d]^s[a],16)
    s[c]=(s[c]+s[d])&0xffffffff; s[b]=rotl(s[b]^s[c],12)
    s[a]=(s[a]+s[b])&0xffffffff; s[d]=rotl(s[d]^s[a],8)
    s[c]=(s[c]+s[d])&0xffffffff; s[b]=rotl(s[b]^s[c],7)
def hchacha(key,n16):
    s=list(struct.unpack('<4I',b'expand 32-byte k'))+list(struct.unpack('<8I',key))+list(struct.unpack('<4I',n16))
    for _ in range(10):
        qr(s,0,4,8,12);qr(s,1,5,9,13);qr(s,2,6,10,14);qr(s,3,7,11,15)
        qr(s,0,5,10,15);qr(s,1,6,11,12);qr(s,2,7,8,13);qr(s,3,4,9,14)
    return struct.pack('<8I',*(s[0:4]+s[12:16]))
def xopen(key,n24,ct_tag):
    sub=hchacha(key,n24[:16]); return ChaCha20Poly1305(sub).decrypt(b'\0'*4+n24[16:],ct_tag,None)
def b64u(s): return base64.urlsafe_b64decode(s+'='*(-len(s)%4))
def decrypt(content, sender_x, priv):
    assert content.startswith('v2:'); raw=b64u(content[3:])
    n24=raw[:24]; body=raw[24:]
    for odd in (0,1):
        try:
            shared=mul(priv,lift(sender_x,odd)); key=hkdf(comp(shared))
            return xopen(key,n24,body).decode(), odd, comp(shared).hex(), key.hex()
        except Exception as e: last=e
    raise last
import sys
fx=json.load(open(sys.argv[1]))
for name,f in fx.items():
    priv=int(f['priv'],16)
    seal,odd1,ss1,k1=decrypt(f['content'],f['wrap_pubkey'],priv)
    print('==',name,'wrap layer parity odd=',odd1,'sharedpoint',ss1,'key',k1)
    print('SEAL JSON:',seal)
    s=json.loads(seal)
    rumor,odd2,ss2,k2=decrypt(s['content'],s['pubkey'],priv)
    print('seal layer parity odd=',odd2,'sharedpoint',ss2,'key',k2)
    print('RUMOR JSON:',rumor)
