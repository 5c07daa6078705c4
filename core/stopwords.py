"""Function words of the languages the clone filter knows (English, German, French, Spanish,
Italian, Dutch, Polish, Portuguese, Russian, Ukrainian, Vietnamese, Japanese, Chinese), for
recall over content words.

Each list holds the most frequent function words of one language, lowercased as
`wikisum.core.text.words` yields them: articles, pronouns and possessives, prepositions and
their contractions with the article, conjunctions, auxiliary and modal verb forms, negation and
the commonest adverbs and quantifiers. Words that also carry content in the language (English
"won", "fire", "bill") are left out: a content word taken for a function word is lost to the
comparison, a function word taken for content is only noise. Fragments that `words`
makes of elided forms ("doesn't" -> "doesn", "t"; "qu'il" -> "qu", "il"; "dell'arte" -> "dell",
"arte") are listed where they have two or more letters; single characters are dropped by the
caller in every language (which takes Japanese particles and Chinese 的, 了, 是 with them: their
lists hold the words of two characters or more that ICU's segmentation yields).

The English list is this project's own rather than scikit-learn's ``ENGLISH_STOP_WORDS``, which
holds content words ("fire", "bill", "system", "interest", "detail") and whose import pulls in
SciPy.
"""

from __future__ import annotations


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


ENGLISH = _words("""
    a an the this that these those there here
    i me my mine myself we us our ours ourselves you your yours yourself yourselves
    he him his himself she her hers herself it its itself they them their theirs themselves
    one ones
    who whom whose which what whatever whoever whichever when where why how whether
    is am are was were be been being have has had having do does did doing done
    will would shall should can could may might must ought cannot
    don doesn didn isn aren wasn weren hasn haven hadn couldn shouldn wouldn ll ve re
    not no nor only own same such too very just also even still already again ever never
    of to in on at by for with from into onto upon about above below over under between among
    amongst through throughout during before after since until till against across along
    around behind beyond within without toward towards via per off out up down near
    and or but so yet if then than as because although though unless whereas while whilst
    all any both each either neither every some few many much more most other others another
    several enough less least
    now thus hence however therefore yes well
    etc eg ie et al
    """)

GERMAN = _words("""
    der die das des dem den ein eine einer eines einem einen
    kein keine keiner keines keinem keinen
    und oder aber doch sondern denn sowie als wie wenn ob dass daß weil da damit obwohl
    während bevor nachdem seit seitdem bis sobald solange falls sodass
    ich du er sie es wir ihr mich mir dich dir ihn ihm uns euch ihnen sich man
    mein meine meiner meines meinem meinen dein deine deiner deines deinem deinen
    sein seine seiner seines seinem seinen ihre ihrer ihres ihrem ihren
    unser unsere unserer unseres unserem unseren euer eure eurer eures eurem euren
    dieser diese dieses diesem diesen jener jene jenes jenem jenen
    welcher welche welches welchem welchen derer deren dessen
    wer was wem wen wessen wo wann warum woher wohin womit wofür
    in im ins an am ans auf aus bei beim mit nach von vom zu zum zur für fürs über unter vor
    hinter neben zwischen durch gegen ohne um ab trotz wegen statt innerhalb außerhalb
    ist sind war waren bin bist seid gewesen wird werden wurde wurden worden wirst werdet
    hat haben hatte hatten habe hast habt gehabt hätte hätten
    kann können konnte konnten muss müssen musste mussten soll sollen sollte sollten
    will wollen wollte wollten darf dürfen mag möchte möchten würde würden wäre wären
    kannst könnt musst sollst willst darfst
    nicht nur auch noch schon sehr so dann ja nein mehr hier dort jetzt immer wieder
    etwa alle alles allem allen aller jede jeder jedes jedem jeden viel viele vielen
    einige einigen etwas nichts zwar eben bzw usw ganz gar mal dabei dazu daher darum
    dafür darauf daran davon dadurch hierzu sowohl weder
    """)

FRENCH = _words("""
    le la les un une des du de au aux ce cet cette ces
    et ou mais donc or ni car que qu qui quoi dont où si comme quand lorsque lorsqu puisque
    puisqu parce quoique
    je tu il elle on nous vous ils elles me te se lui leur leurs eux moi toi soi en
    mon ma mes ton ta tes son sa ses notre nos votre vos
    dans par pour sur sous avec sans chez vers entre contre depuis pendant avant après selon
    malgré jusqu jusque parmi envers dès
    est sont était étaient être été suis es sommes êtes sera seront serait seraient fut
    soit
    ai as avons avez ont avait avaient avoir eu aura auront aurait auraient
    fait faire peut peuvent pouvait doit doivent
    ne pas plus moins très aussi bien tout tous toute toutes même mêmes autre autres
    tel telle tels telles chaque quelque quelques aucun aucune
    ceci cela ça celui celle ceux celles
    ici là alors ainsi encore déjà toujours jamais non oui
    """)

SPANISH = _words("""
    el la los las lo un una unos unas al del de
    ni pero sino que porque como cuando donde si aunque mientras pues
    yo tú tu él ella ello nosotros nosotras vosotros vosotras ellos ellas usted ustedes
    me te se nos os le les mi mis tus su sus nuestro nuestra nuestros nuestras
    vuestro vuestra vuestros vuestras
    ante bajo con contra desde durante en entre hacia hasta mediante para por según sin
    sobre tras
    es son era eran ser sido siendo fue fueron está están estaba estaban estar estado
    ha han había habían haber he has hemos hay sea sean será serán sería serían
    este esta esto estos estas ese esa eso esos esas aquel aquella aquello aquellos aquellas
    qué quién quien quienes cuál cual cuales cuyo cuya cuyos cuyas dónde cuándo cómo cuánto
    no sí muy más menos también ya tan tanto todo toda todos todas otro otra otros otras
    mismo misma mismos mismas cada algún alguna algunos algunas ningún ninguna
    puede pueden hace hacer así aquí allí ahora siempre nunca solo sólo bien
    """)

ITALIAN = _words("""
    il lo la gli le un uno una
    del dello della dei degli delle dell al allo alla ai agli alle all
    dal dallo dalla dai dagli dalle dall nel nello nella nei negli nelle nell
    sul sullo sulla sui sugli sulle sull col coi
    di da in con su per tra fra
    ed ma però anche che chi cui come quando dove se perché mentre quindi poi né oppure
    io tu lui lei noi voi loro mi ti si ci vi ne me te sé
    mio mia miei mie tuo tua tuoi tue suo sua suoi sue nostro nostra nostri nostre
    vostro vostra vostri vostre
    questo questa questi queste quello quella quelli quelle quest quell
    è sono era erano essere stato stata stati state sia siano sarà saranno sarebbe
    fu furono ho hai ha abbiamo avete hanno aveva avevano avere avuto
    può possono deve devono fa fare
    non più meno molto molti molta molte tutto tutti tutta tutte altro altra altri altre
    stesso stessa ogni qualche ancora già sempre mai così solo
    """)

DUTCH = _words("""
    de het een der des den
    en of maar want dus dat die dit deze wat wie welk welke waar wanneer hoe omdat als toen
    terwijl hoewel zodat dan
    ik jij je hij zij ze wij we jullie mij me mijn jouw jou uw zijn haar hun hen ons onze
    zich zichzelf
    in op aan bij met van voor naar uit door over onder tegen tussen tot zonder om na
    sinds tijdens binnen buiten achter langs per via vanaf
    is was waren ben bent wordt worden werd werden geworden heeft hebben had hadden heb
    hebt gehad kan kunnen kon konden zal zullen zou zouden moet moeten moest mag mogen
    wil willen wilde
    niet geen ook nog al wel zo er hier daar nu meer veel alle alles elk elke iets niets
    ieder iedere enkele andere ander heel zeer reeds
    """)

POLISH = _words("""
    we ze na do od po za przy przez pod nad przed bez dla ku między oraz lub albo ani
    ale lecz jednak czy że żeby aby bo ponieważ gdy kiedy jeśli jeżeli gdzie jak
    który która które którego której któremu którym których którzy
    jest są był była było byli były być będzie będą jestem jesteś jesteśmy
    został została zostało zostały zostali może można trzeba ma mają miał miała miało mieć
    się nie to ten ta te tego tej tym tych temu tą tę
    ja ty on ona ono my wy oni one mnie mi mną ciebie cię tobie ci nas nam nami was wam
    wami go jego jej ich im nim niej nich nimi mu
    mój moja moje mojego swój swoja swoje swojego swoim swoich swoją nasz nasza nasze
    naszego wasz wasza wasze
    co kto czego kogo komu czym kim
    już jeszcze też także tylko bardzo więc tak również nawet właśnie tu tam teraz wtedy
    zawsze nigdy
    wszystko wszyscy wszystkie każdy każda każde inny inna inne innych jakiś jakie jaki
    jaka taki taka takie
    sobie siebie sobą
    """)

PORTUGUESE = _words("""
    os as um uma uns umas ao aos à às do da dos das no na nos nas dum duma num numa
    pelo pela pelos pelas de em por para com sem sob sobre entre até desde contra após
    perante
    ou mas nem porque que se como quando onde embora enquanto pois porém
    eu tu ele ela nós vós eles elas você vocês me te lhe lhes vos mim ti si
    meu minha meus minhas teu tua seu sua seus suas nosso nossa nossos nossas
    este esta estes estas isto esse essa esses essas isso aquele aquela aqueles aquelas
    aquilo
    é são era eram ser sido foi foram está estão estava estar esteve tem têm tinha ter
    tido há havia haver será serão seria seja sejam
    não sim muito muitos muita muitas mais menos também já ainda todo toda todos todas
    outro outra outros outras mesmo mesma cada algum alguma alguns algumas nenhum nenhuma
    qual quais quem cujo cuja
    pode podem deve fazer faz aqui ali lá agora sempre nunca só apenas assim bem então
    """)

RUSSIAN = _words("""
    и в во не что он на я с со как а то все всё она так его но да ты к ко у же вы за бы по
    только ее её мне было вот от меня еще ещё нет о об обо из ему теперь когда даже ну вдруг ли
    если уже или ни быть был него до вас нибудь опять уж вам ведь там потом себя ничего ей может
    они тут где есть надо ней для мы тебя их чем была сам чтоб без будто чего тоже себе под
    будет ж тогда кто этот того потому этого какой совсем ним здесь этом почти мой тем чтобы нее
    неё сейчас были куда зачем всех никогда можно при наконец другой хоть после над больше тот
    через эти нас про всего них какая много разве эту моя впрочем хорошо свою этой перед иногда
    лучше чуть том нельзя такой им более всегда конечно всю между это также является являются
    которые который которая которое которых которой котором своей своих свой своего своим однако
    этих этим эта
    """)

UKRAINIAN = _words("""
    і й та в у на з із зі до від по за про для без через під над між при після перед біля не ні
    що як а але або чи якщо коли бо тому тоді щоб аніж ніж також теж вже ще лише тільки я ти він
    вона воно ми ви вони мене тебе його її нього неї нас вас їх них мені тобі йому їй нам вам їм
    собі себе свій своя своє свої свого своєї своїх своїм своїми мій моя моє мої твій твоя наш
    наша наше наші ваш ваша ваше ваші цей ця це ці цього цієї цих цим цією той те ті того тієї
    тих тим тією який яка яке які якого якої яких яким якій котрий котра котре є був була було
    були буде будуть бути бувши має мав мала мали мати може можуть можна дуже більш більше менш
    менше найбільш усі всі все весь вся усе кожен кожна інший інша інше інші інших так там тут
    де куди звідки чому навіть саме ж же б би ось он зокрема тобто
    """)

VIETNAMESE = _words("""
    và của là có được trong những các một cho với này đã không để từ khi cũng như về đến ra theo
    tại bị sẽ thì mà nhưng hay hoặc nếu vì nên do bởi rằng đó đây kia ấy nào gì sao ai đâu bao
    nhiêu mọi mỗi từng nhiều ít rất lại còn vẫn đang vừa mới chỉ đều cả tôi ta chúng mình bạn
    chị em ông bà họ nó hắn thế vậy nữa thêm trên dưới giữa sau trước ngoài bên qua lên xuống
    vào cùng nhau nhất hơn quá lắm khá bằng thể tuy dù mặc sự việc rồi chưa hết
    """)

JAPANESE = _words("""
    これ それ あれ どれ この その あの どの ここ そこ あそこ どこ こちら そちら こと もの ため
    よう ところ とき する した しよう しない ある あり あっ あら いる い おり おる なる なり
    なら です ます まし ない れる せる から まで より など ほど だけ しか ばかり くらい ぐらい
    また および ならびに あるいは または ただし しかし けれど けど では でも とも として
    について によって による において における に対して
    """)

CHINESE = _words("""
    并不 从而 而已 此外 总之 例如 比如 之间 之中
    我们 你们 他们 她们 它们 咱们 自己 大家 这个 那个 这些 那些 这样 那样 这里 那里 这种 那种
    一个 一种 一些 什么 怎么 怎样 为什么 哪里 哪个 多少 没有 不是 就是 还是 也是 都是 只是 但是
    可是 而是 或是 因为 所以 如果 虽然 而且 并且 或者 以及 由于 因此 然而 不过 于是 即使 只要
    只有 通过 对于 关于 根据 按照 为了 除了 随着 作为 成为 进行 已经 正在 曾经 将要 可以 可能
    应该 能够 需要 之一 之后 之前 以后 以前 以上 以下 其中 其他 其它 另外 等等 非常 十分 比较
    更加 最为 一直 一起 一样 同时 仍然 还有
    """)

FUNCTION_WORDS: dict[str, frozenset[str]] = {
    "en": ENGLISH,
    "de": GERMAN,
    "fr": FRENCH,
    "es": SPANISH,
    "it": ITALIAN,
    "nl": DUTCH,
    "pl": POLISH,
    "pt": PORTUGUESE,
    "ru": RUSSIAN,
    "uk": UKRAINIAN,
    "vi": VIETNAMESE,
    "ja": JAPANESE,
    "zh": CHINESE,
}

# ISO 639-2/3 codes that name a listed language.
_ALIASES = {
    "eng": "en", "deu": "de", "ger": "de", "fra": "fr", "fre": "fr", "spa": "es", "ita": "it",
    "nld": "nl", "dut": "nl", "pol": "pl", "por": "pt", "rus": "ru", "ukr": "uk", "vie": "vi",
    "jpn": "ja", "zho": "zh", "chi": "zh",
}


def language_key(lang: str | None) -> str | None:
    """The key of `FUNCTION_WORDS` for a language tag ("de", "de-CH", "pt_BR", "deu"), or None.

    The tag's primary subtag is compared lowercased; a tag of no listed language gives None.
    """
    if not lang:
        return None
    primary = lang.replace("_", "-").split("-", 1)[0].strip().lower()
    primary = _ALIASES.get(primary, primary)
    return primary if primary in FUNCTION_WORDS else None
